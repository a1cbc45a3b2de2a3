package reconcile

import (
	"io/fs"
	"path"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
)

// pendingParams are the authParams file holds in the cluster's pending
// proposal (Input.Pending): an Identity's, or a slice answer's, that this
// cluster signed in an earlier pass whose proposal is not merged yet; nil
// when there is no proposal, no such file, or it does not decode. They are
// a candidate for authParams to reuse, which checks them as it checks the
// shared branch's: a certificate the CA did not sign for the key and
// subject is never reused, whoever wrote the file.
func (p *pass) pendingParams(file string) *authv1beta1.AuthParams {
	if p.in.Pending == nil {
		return nil
	}
	data, err := fs.ReadFile(p.in.Pending, file)
	if err != nil {
		return nil
	}
	if path.Base(file) == layout.IdentityFile {
		id, err := artifact.DecodeIdentity(file, data)
		if err != nil {
			return nil
		}
		return &id.Spec.AuthParams
	}
	rs, err := artifact.DecodeSlice(file, data)
	if err != nil {
		return nil
	}
	return rs.Status.AuthParams
}
