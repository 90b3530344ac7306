module example.com/dsh-search/go-host

go 1.19
