module example.com/dsh-search/go-host

go 1.19

require github.com/dsh-search/dsh-search/clients/go v0.0.0

// Inside this repository the client library comes from ../../clients/go. In a copy elsewhere, point the
// replacement at a checkout of dsh-search:
//
//	go mod edit -replace=github.com/dsh-search/dsh-search/clients/go=/path/to/dsh-search/clients/go
replace github.com/dsh-search/dsh-search/clients/go => ../../clients/go
