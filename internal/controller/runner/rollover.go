package runner

import (
	"context"
	"crypto"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/internal/trust/fluxtrust"
)

// DefaultKeyRolloverWait is Runner.KeyRolloverWait when zero: how long a
// staged key is announced at least before it is promoted. Flux fetches the
// applied branch every minute (manifests/flux) and applies a new revision
// at once; ten minutes leave room for a reconciler or Flux restart in
// between, and for an Argo CD admin to import the staged OpenPGP key.
const DefaultKeyRolloverWait = 10 * time.Minute

// NoKeyRolloverWait, as Runner.KeyRolloverWait, promotes a staged key as
// soon as it is announced: for a cluster no Flux applies.
const NoKeyRolloverWait time.Duration = -1

// rollover is the step of a staged key rollover (backend.KeyRoller) a pass
// takes before it computes. While the cluster does not trust the staged
// key yet, it returns the key for the pass to announce
// (reconcile.Input.StagedKey), and a note saying what the
// switch waits for. Once the cluster trusts it (backend.FluxTruster; a
// backend that cannot see the cluster: KeyRolloverWait after the key was
// announced), it promotes it and makes the Repo sign with it: this pass
// publishes cluster.yaml with the new key and the rotation statement, and
// its Flux Secret trusts the new key alone. Flux verifies that head with
// the keys the last one made it trust, old and new, so it never refuses
// one.
//
// With review branches covering cluster.yaml, the switch is proposed, not
// made: proposal is the staged key for the pass to compute the switch
// with (see switching), and the backend keeps its key, signing the
// commits and seals, until the shared branch holds the switch; the first
// pass that finds it merged promotes the key.
func (r *Runner) rollover(ctx context.Context, tree fs.FS, now time.Time) (announce, proposal *backend.NextKey, note string, err error) {
	if kl, ok := r.Backend.(backend.KeyReloader); ok {
		// Another replica may have switched keys while this one stood by.
		changed, err := kl.ReloadKey(ctx)
		if err != nil {
			return nil, nil, "", err
		}
		if changed {
			if err := rekey(r.Repo, r.Backend); err != nil {
				return nil, nil, "", err
			}
		}
	}
	next, err := r.Backend.Next(ctx)
	if err != nil || next == nil {
		return nil, nil, "", err
	}
	id := r.Backend.ClusterID()
	// The Secret holds the staged key in both forms: its authorized_keys
	// line tells whether Flux's copy is the announced one.
	value, err := fluxtrust.SSHKey(id, next.Signer.Public(), true)
	if err != nil {
		return nil, nil, "", err
	}
	fp, err := handshake.Fingerprint(next.Signer.Public())
	if err != nil {
		return nil, nil, "", err
	}
	review := r.Repo.Reviewed(layout.ClusterPath(id, layout.ClusterFile))
	if review && switchMerged(tree, id, next.Signer.Public(), r.Backend.Signer().Public()) {
		// The switch this cluster proposed is merged: its gates held
		// when it was proposed, and the shared branch now publishes the
		// new key, which the backend takes up at once.
		return r.promote(ctx, r.Backend, fp, "its proposal is merged", true)
	}
	trusted, why, err := r.trusts(ctx, next, value, now)
	if err != nil {
		return nil, nil, "", fmt.Errorf("key rollover to %s: %w", fp, err)
	}
	if waiting := unanswered(tree, id, r.Backend.Signer().Public()); trusted && waiting != "" {
		// A provider that has not answered the last rotation still holds
		// the grant of the key before it, on the word of that rotation's
		// statement: a second switch now would sign a statement it cannot
		// follow, and it would withdraw the grant.
		trusted, why = false, waiting+" has answered this cluster's previous key rotation"
	}
	if !trusted {
		return next, nil, fmt.Sprintf("key rollover to %s: announced to Flux in clusters/%s/flux/, signing with the current key until %s", fp, id, why), nil
	}
	if review {
		return nil, next, fmt.Sprintf("key rollover to %s (%s): the switch is proposed for review; the backend switches to it, and signs with it, once %s holds the proposal", fp, why, r.Repo.Branch()), nil
	}
	return r.promote(ctx, r.Backend, fp, why, false)
}

// promote makes the staged key (fingerprint fp) the cluster key, and the
// Repo sign with it; why says what the switch waited for, merged that the
// shared branch publishes it already (a switch proposed for review).
func (r *Runner) promote(ctx context.Context, kr backend.KeyRoller, fp, why string, merged bool) (announce, proposal *backend.NextKey, note string, err error) {
	old, err := kr.PromoteNextKey(ctx)
	if err != nil {
		return nil, nil, "", fmt.Errorf("key rollover to %s: promote: %w", fp, err)
	}
	if err := rekey(r.Repo, r.Backend); err != nil {
		return nil, nil, "", err
	}
	was, _ := handshake.Fingerprint(old.Public())
	if merged {
		return nil, nil, fmt.Sprintf("key rollover: %s replaces %s (%s): the backend signs with it from this pass on, and Flux trusts the new key alone from its next revision", fp, was, why), nil
	}
	return nil, nil, fmt.Sprintf("key rollover: %s replaces %s (%s); this pass publishes cluster.yaml with the rotation statement %s signed, and Flux trusts the new key alone from its next revision", fp, was, why, was), nil
}

// trusts reports whether the cluster trusts next for the commits it
// applies, and why (or what it waits for): the key has been announced for
// KeyRolloverWait at least (time for Flux to apply the announcing head, or
// for an Argo CD admin to import the staged OpenPGP key), and, on a
// backend that can see the cluster's Flux, Flux's verify Secret holds it.
func (r *Runner) trusts(ctx context.Context, next *backend.NextKey, value []byte, now time.Time) (bool, string, error) {
	wait := r.KeyRolloverWait
	switch {
	case wait == 0:
		wait = DefaultKeyRolloverWait
	case wait < 0:
		wait = 0
	}
	if next.Announced.IsZero() {
		return false, "an applied tree that announces it is pushed, then for " + wait.String() + " (--key-rollover-wait)", nil
	}
	if at := next.Announced.Add(wait); now.Before(at) {
		return false, fmt.Sprintf("%s, %s after it was announced (--key-rollover-wait)", at.UTC().Format(time.RFC3339), wait), nil
	}
	announced := fmt.Sprintf("announced %s ago, at least --key-rollover-wait", now.Sub(next.Announced).Round(time.Second))
	if ft, ok := r.Backend.(backend.FluxTruster); ok {
		ok, why, err := ft.FluxTrusts(ctx, value)
		return ok, announced + "; " + why, err
	}
	return true, announced, nil
}

// unanswered names the providers whose peering with cluster id is Ready on
// id's side only by the Identity of id's previous key
// (reasons.KeyRotationInProgress), as id's status.yaml in tree
// says, signed by key; "" when none. A status.yaml that is not the
// cluster's own (someone else edited it: the pass writes it anew) is not
// taken at its word either way: it holds the switch too.
func unanswered(tree fs.FS, id string, key crypto.PublicKey) string {
	file := layout.ClusterPath(id, layout.StatusFile)
	keep, err := SignedByManifest(id, key)(tree)
	if err != nil || !keep(file) {
		return file + " is signed by " + id + " again and every provider there"
	}
	st, err := layout.ReadStatus(tree, id)
	if err != nil {
		return file + " reads again and every provider there"
	}
	var waiting []string
	for _, p := range st.Peerings {
		if p.Role != layout.RoleConsumer {
			continue
		}
		for _, c := range p.Conditions {
			if c.Type == "Ready" && c.Reason == reasons.KeyRotationInProgress {
				waiting = append(waiting, p.Provider)
			}
		}
	}
	return strings.Join(waiting, ", ")
}
