package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/liqo/render"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/schema"
)

// consume advances one peering where this cluster is the consumer.
func (p *pass) consume(ctx context.Context, pr schema.Peering, st *peeringObject) error {
	provider := pr.Provider
	ci, ok := p.trustPeer(provider, st)
	if !ok {
		return p.carry(layout.PeerDir(p.self, provider), layout.ClusterPath(provider, layout.InboxDir, p.self))
	}
	note := p.ignoredNote(provider)
	nonceFile := layout.InboxPath(p.self, provider, layout.NonceFile)
	data, found, err := p.read(nonceFile)
	if err != nil {
		return err
	}
	if !found {
		if p.hasIdentity(provider) {
			return p.keepIdentity(provider, st, reasons.WaitingForNonce, fmt.Sprintf("%s is missing%s", nonceFile, note))
		}
		progress(st, layout.StepPending, reasons.WaitingForNonce, "waiting for %s to send a nonce in %s%s", provider, nonceFile, note)
		return nil
	}
	nonce, err := artifact.ParseNonce(nonceFile, data, p.self)
	if err != nil {
		if p.hasIdentity(provider) {
			return p.keepIdentity(provider, st, artifactReason(err), err.Error()+note)
		}
		return p.refused(st, layout.StepPending, err)
	}
	tenant, err := p.tenantFor(ctx, provider, nonce, pr.AcceptPolicy())
	if err != nil {
		return err
	}
	if pr.AcceptPolicy() == schema.PolicyToken && tenant.Annotations[artifact.AnnotationTokenProof] == "" {
		note += fmt.Sprintf("; the peering's policy is token but this cluster holds no token for %s, so the Tenant carries no proof and %s refuses it (EmptyRefused): "+
			"%s's admin runs gitpeer token generate --cluster %s --peer %s and this cluster's admin stores it with gitpeer token set --cluster %s --peer %s",
			provider, provider, provider, provider, p.self, p.self, provider)
	}
	if err := p.put(layout.InboxPath(provider, p.self, layout.TenantFile), tenant); err != nil {
		return err
	}
	// The slice requests go out with the Tenant, so the provider answers
	// them with its Identity: a peering with slices is Ready after the
	// handshake's four passes. The provider decides nothing before the
	// Tenant checks out (answerSlices runs only for a verified Tenant).
	requests, err := p.sendSliceRequests(pr)
	if err != nil {
		return err
	}

	identityFile := layout.InboxPath(p.self, provider, layout.IdentityFile)
	data, found, err = p.read(identityFile)
	if err != nil {
		return err
	}
	if !found {
		if p.hasIdentity(provider) {
			return p.keepIdentity(provider, st, reasons.WaitingForIdentity, fmt.Sprintf("%s is missing%s", identityFile, note))
		}
		for _, r := range requests {
			st.status.Slices = append(st.status.Slices, r.pending(provider))
		}
		progress(st, layout.StepTenantSent, reasons.WaitingForIdentity, "tenant sent to %s; waiting for its Identity in %s%s", provider, identityFile, note)
		return nil
	}
	_, keyDER, err := handshake.ParsePublicKey([]byte(p.me.PublicKey))
	if err != nil {
		return err
	}
	check := artifact.IdentityCheck{ConsumerID: p.self, Provider: ci, ConsumerKeyDER: keyDER, Now: p.in.Now, Cache: p.in.Cache.verifier()}
	identity, err := artifact.VerifyIdentity(identityFile, data, check)
	if err != nil {
		if was := p.previousKeyIdentity(identityFile, data, check); was != "" && p.hasIdentity(provider) {
			// This cluster rolled its key over: the provider's Identity
			// for the old key serves until it answers the new Tenant
			// (it keeps the old grant meanwhile: rotatedFrom).
			if err := p.carryIdentity(provider); err != nil {
				return err
			}
			ready(st, layout.StepReady, reasons.KeyRotationInProgress, "kept the Identity %s issued for this cluster's previous key %s until it answers the Tenant of the new key %s%s",
				provider, was, p.me.Fingerprint, note)
			return nil
		}
		if p.hasIdentity(provider) {
			return p.keepIdentity(provider, st, artifactReason(err), err.Error()+note)
		}
		return p.refused(st, layout.StepTenantSent, err)
	}
	slices, err := p.acceptSlices(provider, requests, check, st)
	if err != nil {
		return err
	}
	peering := render.Consumed{Provider: provider, Identity: &identity.Spec.AuthParams, Slices: slices}
	if err := p.render(render.Consumer(p.self, peering)); err != nil {
		return err
	}
	p.out.Identities = append(p.out.Identities, liqo.ControlPlaneIdentity(p.self, provider, identity.Spec.AuthParams))
	_, notAfter, _ := handshake.CertificateValidity(identity.Spec.AuthParams.SignedCRT)
	p.out.Certificates = append(p.out.Certificates, Certificate{Consumer: p.self, Provider: provider, Role: layout.RoleConsumer, NotAfter: notAfter})
	ready(st, layout.StepReady, reasons.IdentityAccepted, "identity from %s accepted; certificate valid until %s%s",
		provider, notAfter.UTC().Format(time.RFC3339), note)
	return nil
}

// hasIdentity reports whether this cluster rendered an Identity of provider
// in an earlier pass (and signed it).
func (p *pass) hasIdentity(provider string) bool {
	_, err := fs.Stat(p.in.Tree, render.Path(p.self, provider, authv1beta1.IdentityKind, liqo.ControlPlaneIdentityName(provider)))
	return err == nil
}

// keepIdentity keeps the objects rendered for provider (and this cluster's
// slice requests) as they were when what the provider sent is missing or
// refused: a repo writer cannot withdraw a working Identity. The status
// names why.
func (p *pass) keepIdentity(provider string, st *peeringObject, reason, why string) error {
	if err := p.carryIdentity(provider); err != nil {
		return err
	}
	stall(st, layout.StepReady, reason, "kept the Identity accepted from %s: %s", provider, why)
	return nil
}

// previousKeyIdentity returns the fingerprint of this cluster's previous
// key when the Identity data, refused for its current key, is valid for
// the key its cluster.yaml's rotation statement names as replaced: the
// provider has not answered the new key's Tenant yet. "" otherwise.
func (p *pass) previousKeyIdentity(file string, data []byte, check artifact.IdentityCheck) string {
	if p.me.Rotation == nil {
		return ""
	}
	prev, der, err := handshake.ParsePublicKey([]byte(p.me.Rotation.PreviousPublicKey))
	if err != nil {
		return ""
	}
	fp, err := handshake.Fingerprint(prev)
	if err != nil || p.me.VerifyRotation(fp) != nil {
		return ""
	}
	check.ConsumerKeyDER = der
	if _, err := artifact.VerifyIdentity(file, data, check); err != nil {
		return ""
	}
	return fp
}

// carryIdentity keeps the objects rendered for provider (and this
// cluster's slice requests) as they were, and the Tenant this pass sends.
func (p *pass) carryIdentity(provider string) error {
	tenantFile := layout.InboxPath(provider, p.self, layout.TenantFile)
	tenant, hasTenant := p.out.Files[tenantFile]
	// The requests sent with the Tenant this pass give way to those sent
	// before: they stay as they were until the provider's answer is back.
	outbox := layout.ClusterPath(provider, layout.InboxDir, p.self) + "/"
	for f := range p.out.Files {
		if strings.HasPrefix(f, outbox) {
			delete(p.out.Files, f)
		}
	}
	if err := p.carry(layout.PeerDir(p.self, provider), layout.ClusterPath(provider, layout.InboxDir, p.self)); err != nil {
		return err
	}
	if hasTenant {
		p.out.Files[tenantFile] = tenant
	}
	return nil
}

// tenantFor builds this cluster's Tenant answering nonce: the existing
// Tenant while it still verifies for this nonce, key and token proof (so
// the bytes are stable pass after pass, for keys whose signatures are not
// deterministic too), else one signed now. The backend's key signs only in
// the second case: a pass that keeps the Tenant asks nothing of it here.
func (p *pass) tenantFor(ctx context.Context, provider string, nonce artifact.Nonce, pol string) (*authv1beta1.Tenant, error) {
	signer := p.in.Backend.Signer()
	pubPEM, err := handshake.MarshalPublicKey(signer.Public())
	if err != nil {
		return nil, err
	}
	proof := ""
	if pol == schema.PolicyToken {
		// Without a token the Tenant goes out without proof and the provider
		// answers EmptyRefused, as Liqo v0.2 did.
		if token, err := p.in.Backend.Token(ctx, provider); err == nil {
			proof = artifact.TokenProof(token, nonce.Value)
		} else if !errors.Is(err, backend.ErrNoToken) {
			return nil, err
		}
	}
	// The Tenant sent before, while it answers this nonce with this key and
	// proof: a fresh one would say the same (the nonce signature and the
	// CSR are signed only when it is not, not at every pass).
	file := layout.InboxPath(provider, p.self, layout.TenantFile)
	if data, found, _ := p.read(file); found {
		_, der, _ := handshake.ParsePublicKey(pubPEM)
		old, err := artifact.VerifyTenant(file, data, artifact.TenantCheck{ConsumerID: p.self, Nonce: nonce.Value, PinnedKeyDER: der, Cache: p.in.Cache.verifier()})
		if err == nil && old.Annotations[artifact.AnnotationTokenProof] == proof {
			if e, err := artifact.TenantEpoch(file, old); err == nil && e == nonce.Epoch {
				return old, nil
			}
		}
	}
	sig, err := handshake.SignNonce(signer, nonce.Value)
	if err != nil {
		return nil, fmt.Errorf("sign nonce from %s: %w", provider, err)
	}
	csr, err := handshake.ControlPlaneCSR(signer, p.self)
	if err != nil {
		return nil, fmt.Errorf("csr for %s: %w", provider, err)
	}
	fresh := artifact.NewTenant(p.self, nonce, pubPEM, csr, sig)
	if proof != "" {
		fresh.Annotations[artifact.AnnotationTokenProof] = proof
	}
	return fresh, nil
}

// sliceRequest is one slice of the spec as this cluster requests it of a
// provider.
type sliceRequest struct {
	name string
	// req is the request as written into the provider's inbox.
	req *authv1beta1.ResourceSlice
	// answerFile is where the provider answers it.
	answerFile string
}

// pending is the status of a request the provider has not answered yet (or
// whose answer this cluster has not read yet).
func (r sliceRequest) pending(provider string) layout.SliceStatus {
	return layout.SliceStatus{Name: r.name, Authentication: "Pending", Resources: "Pending", Reason: "WaitingForDecision",
		Message: fmt.Sprintf("waiting for %s to decide in %s", provider, r.answerFile)}
}

// sendSliceRequests writes a request (a Liqo ResourceSlice with its CSR)
// into the provider's inbox for every slice the spec asks of it.
func (p *pass) sendSliceRequests(pr schema.Peering) ([]sliceRequest, error) {
	provider := pr.Provider
	var out []sliceRequest
	for _, s := range pr.Slices {
		resources, err := Quantities(s.Resources)
		if err != nil {
			return nil, fmt.Errorf("spec: peering %s → %s: slice %s: %w", pr.Consumer, provider, s.Name, err)
		}
		csr, err := handshake.ResourceSliceCSR(p.in.Backend.Signer(), s.Name, p.self)
		if err != nil {
			return nil, fmt.Errorf("slice %s csr: %w", s.Name, err)
		}
		req := liqo.ResourceSlice(s.Name, p.self, provider, s.Class, resources, s.VirtualNode(), csr)
		if err := p.put(layout.InboxPath(provider, p.self, artifact.SliceFile(s.Name)), req); err != nil {
			return nil, err
		}
		out = append(out, sliceRequest{name: s.Name, req: req, answerFile: layout.InboxPath(p.self, provider, artifact.SliceAnswerFile(s.Name))})
	}
	return out, nil
}

// acceptSlices reads the provider's answer to every request and returns
// the accepted ones, whose ResourceSlice and "resourceslice-<name>"
// Identity go into this cluster's kustomization. It runs only once the
// provider's Identity is verified.
func (p *pass) acceptSlices(provider string, requests []sliceRequest, check artifact.IdentityCheck, st *peeringObject) ([]render.Slice, error) {
	var accepted []render.Slice
	for _, r := range requests {
		req, answerFile := r.req, r.answerFile
		data, found, err := p.read(answerFile)
		if err != nil {
			return nil, err
		}
		if !found {
			kept, err := p.keepSlice(provider, req, answerFile, st)
			if err != nil {
				return nil, err
			}
			if !kept {
				st.status.Slices = append(st.status.Slices, r.pending(provider))
			}
			continue
		}
		// The request must round-trip through YAML to compare with the answer.
		reqData, err := p.in.Cache.encode(req)
		if err != nil {
			return nil, err
		}
		if req, err = liqo.DecodeResourceSlice(reqData); err != nil {
			return nil, err
		}
		ans, err := artifact.VerifySliceAnswer(answerFile, data, req, check)
		if errors.Is(err, artifact.ErrStaleAnswer) {
			ps := r.pending(provider)
			if kept, err := p.keepRendered(provider, r.name, nil); err != nil {
				return nil, err
			} else if kept {
				ps.Message += "; the slice granted before stays applied until then"
			}
			st.status.Slices = append(st.status.Slices, ps)
			continue
		}
		var ae *artifact.Error
		if errors.As(err, &ae) {
			st.status.Slices = append(st.status.Slices, layout.SliceStatus{Name: r.name, Authentication: "Denied", Resources: "Pending",
				Reason: ae.Reason, Message: ae.Error()})
			continue
		}
		if err != nil {
			return nil, err
		}
		st.status.Slices = append(st.status.Slices, sliceStatus(ans.Slice))
		if !ans.Accepted {
			continue
		}
		accepted = append(accepted, render.Slice{Name: r.name, Request: req, AuthParams: ans.Slice.Status.AuthParams})
	}
	return accepted, nil
}

// keepSlice keeps, byte for byte, the ResourceSlice and Identity this
// cluster rendered for req in an earlier pass when the provider's answer
// cannot be read although the provider did not withdraw it (a repo writer
// changed, deleted or hid it) and req is still exactly what was accepted:
// an unsigned edit never withdraws a granted slice. Only the provider
// withdraws an answer, by no longer listing it in the manifest it signs.
func (p *pass) keepSlice(provider string, req *authv1beta1.ResourceSlice, answerFile string, st *peeringObject) (bool, error) {
	if m, ok := p.view.Verified(provider, path.Dir(answerFile)); ok {
		if _, listed := m.Lookup(path.Base(answerFile)); !listed {
			return false, nil
		}
	}
	want, err := p.in.Cache.encode(req)
	if err != nil {
		return false, err
	}
	if kept, err := p.keepRendered(provider, req.Name, want); !kept || err != nil {
		return false, err
	}
	why, ok := p.view.IgnoredReason(provider, path.Dir(answerFile), answerFile)
	if !ok {
		why = "missing"
	}
	st.status.Slices = append(st.status.Slices, layout.SliceStatus{Name: req.Name, Authentication: "Accepted", Resources: "Accepted",
		Reason: liqo.ReasonSliceResourcesAccepted, Message: fmt.Sprintf("kept the slice accepted before: %s is %s", answerFile, why)})
	return true, nil
}

// keepRendered keeps, byte for byte, the ResourceSlice named slice and its
// Identity that this cluster rendered in an earlier pass, if it did and, for
// a want other than nil, the rendered slice is exactly want. keepSlice uses
// it for an answer that cannot be read; acceptSlices, while the provider
// has yet to answer a changed request, so that the grant it made before
// stays applied: dropping it until the answer came would have the GitOps
// engine prune the slice and its virtual node, and create them again one
// pass later.
func (p *pass) keepRendered(provider, slice string, want []byte) (bool, error) {
	files := []string{
		render.Path(p.self, provider, authv1beta1.ResourceSliceKind, slice),
		render.Path(p.self, provider, authv1beta1.IdentityKind, liqo.ResourceSliceIdentityName(slice)),
	}
	var data [2][]byte
	for i, f := range files {
		d, found, err := p.read(f)
		if err != nil || !found {
			return false, err
		}
		if i == 0 && want != nil && !bytes.Equal(d, want) {
			return false, nil
		}
		data[i] = d
	}
	p.out.Files[files[0]], p.out.Files[files[1]] = data[0], data[1]
	return true, nil
}

// artifactReason is the reason of a refusal, MalformedArtifact when it has none.
func artifactReason(err error) string {
	var ae *artifact.Error
	if errors.As(err, &ae) {
		return ae.Reason
	}
	return reasons.MalformedArtifact
}
