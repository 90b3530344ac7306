module example.com/dsh-search/remote-host

go 1.19

require github.com/dsh-search/dsh-search/clients/go v0.0.0

replace github.com/dsh-search/dsh-search/clients/go => ../../../../clients/go
