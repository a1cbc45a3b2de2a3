// gitpeer's Liqo driver is built inside a copy of Liqo's module, with Liqo's
// go.mod (hack/build-liqo.sh): this go.mod only keeps it out of gitpeer's
// module (go build/vet/test ./... of the root skip it).
module github.com/gitpeer/gitpeer/hack/liqo-driver

go 1.25
