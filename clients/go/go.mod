module github.com/dsh-search/dsh-search/clients/go

go 1.19
