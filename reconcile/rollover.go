package reconcile

import (
	"context"
	"errors"
	"fmt"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/fluxtrust"
)

// ownInfo checks the published cluster.yaml against the backend
// (matchBackend). When they differ because the backend promoted its staged
// key (backend.KeyRoller) and the repo still publishes the key that
// promotion replaced, the pass is the rollover's switch: it publishes
// cluster.yaml anew with the backend's key, the staged API server if any,
// and a rotation statement signed by the previous key, which peers check
// against their pins. The published file must then be signed by that
// previous key: a repo writer's edit of it (another API server) is never
// carried into a statement this cluster signs.
func (p *pass) ownInfo(ctx context.Context) error {
	err := matchBackend(p.me, p.in.Backend)
	if err == nil {
		return nil
	}
	prev, perr := p.in.Backend.PreviousKey(ctx)
	if errors.Is(perr, backend.ErrNoPreviousKey) {
		return err
	}
	if perr != nil {
		return fmt.Errorf("%w (and the key a rollover replaced cannot be read: %v)", err, perr)
	}
	fp, ferr := handshake.Fingerprint(prev.Public())
	if ferr != nil || fp != p.me.Fingerprint {
		return err
	}
	if serr := p.clusterInfoSigned(p.self, prev.Public()); serr != nil {
		return fmt.Errorf("%s is not signed by %s's previous key %s, so no rotation statement vouches for it: %w",
			layout.ClusterPath(p.self, layout.ClusterFile), p.self, fp, serr)
	}
	own, err := p.in.Backend.ClusterInfo()
	if err != nil {
		return err
	}
	next := *p.me
	next.PublicKey, next.Fingerprint, next.Rotation = own.PublicKey, own.Fingerprint, nil
	if own.APIServer != "" {
		next.APIServer = own.APIServer
	}
	if err := layout.SignRotation(&next, prev); err != nil {
		return err
	}
	if err := matchBackend(&next, p.in.Backend); err != nil {
		return err
	}
	data, err := next.Encode()
	if err != nil {
		return err
	}
	p.me, p.rotated, p.ownKey = &next, data, prev.Public()
	return nil
}

// renderFluxTrust writes clusters/<self>/flux/ (package fluxtrust): the
// keys the cluster's Flux verifies its applied head with, in both formats
// Flux reads. The key in force is the backend's; the next one, during a
// rollover, is Input.StagedKey.
func (p *pass) renderFluxTrust() error {
	k, err := fluxtrust.Of(p.self, p.in.Backend.Signer(), p.in.StagedKey)
	if err != nil {
		return err
	}
	files, err := fluxtrust.Files(p.self, k)
	if err != nil {
		return err
	}
	for rel, data := range files {
		p.out.Files[layout.ClusterPath(p.self, rel)] = data
	}
	return nil
}
