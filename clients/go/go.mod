module github.com/dsh-search/dsh-search/clients/go

// Go 1.19 or newer (Debian 12's golang-go); the README's install steps and scripts/test say the same.
go 1.19
