package reconcile

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"sort"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitpeer/gitpeer/internal/backend"
	"github.com/gitpeer/gitpeer/internal/liqo"
	"github.com/gitpeer/gitpeer/internal/liqo/admission"
	"github.com/gitpeer/gitpeer/internal/liqo/handshake"
	"github.com/gitpeer/gitpeer/internal/liqo/policy"
	"github.com/gitpeer/gitpeer/internal/liqo/render"
	"github.com/gitpeer/gitpeer/internal/reasons"
	"github.com/gitpeer/gitpeer/internal/repo/artifact"
	"github.com/gitpeer/gitpeer/internal/repo/layout"
	"github.com/gitpeer/gitpeer/schema"
)

// provide advances one peering where this cluster is the provider and
// renders what its state grants (render.Provider).
func (p *pass) provide(ctx context.Context, pr schema.Peering, st *peeringObject) error {
	if _, ok := p.trustPeer(pr.Consumer, st); !ok {
		// Whatever a repo writer did to the consumer's cluster.yaml, the
		// peering accepted before stays as it was until an admin decides.
		return p.carry(layout.PeerDir(p.self, pr.Consumer), layout.ClusterPath(pr.Consumer, layout.InboxDir, p.self))
	}
	peering := render.Provided{Consumer: pr.Consumer}
	if err := p.advanceProvided(ctx, pr, st, &peering); err != nil {
		return err
	}
	return p.render(render.Provider(p.self, peering))
}

// advanceProvided runs the provider's side of the handshake for a trusted
// consumer: it sends the nonce, checks the Tenant, issues the Identity and
// answers the slices, recording in peering what is to be rendered and in
// st the peering's condition.
func (p *pass) advanceProvided(ctx context.Context, pr schema.Peering, st *peeringObject, peering *render.Provided) error {
	consumer := pr.Consumer
	pol := pr.AcceptPolicy()
	pinned := p.trusted[consumer].der
	accepted := p.acceptedTenant(consumer) // our own verified copy from earlier passes
	rotating := ""                         // the consumer's previous key's fingerprint while its rotation is in progress
	if accepted != nil {
		if _, der, err := handshake.ParsePublicKey(accepted.Spec.PublicKey); err != nil || !bytes.Equal(der, pinned) {
			// The consumer's key changed: it must answer anew. Until a
			// Tenant for the new key verifies, the grant of the old one
			// stays, if the old key itself vouched for the new one.
			if rotating = p.rotatedFrom(consumer, accepted); rotating == "" {
				accepted = nil
			}
		}
	}

	tenantFile := layout.InboxPath(p.self, consumer, layout.TenantFile)
	tenantData, found, err := p.read(tenantFile)
	if err != nil {
		return err
	}
	note := p.ignoredNote(consumer)
	// A Tenant equal to the one accepted before is settled: its nonce may
	// have expired since, that is no reason to refuse it now.
	settled := found && accepted != nil && sameTenant(tenantFile, tenantData, accepted)
	answered := uint64(0)
	if settled {
		answered, _ = artifact.TenantEpoch(tenantFile, accepted)
	}
	nonce, err := p.nonceFor(consumer, settled, answered)
	if err != nil {
		return err
	}
	secret := artifact.NonceSecret(consumer, nonce)
	if err := p.put(layout.InboxPath(consumer, p.self, layout.NonceFile), secret); err != nil {
		return err
	}
	peering.Nonce = nonce.Value

	var tenant *authv1beta1.Tenant
	switch {
	case !found && accepted == nil:
		progress(st, layout.StepNonceSent, reasons.WaitingForTenant, "nonce sent to %s; waiting for its Tenant in %s%s", consumer, tenantFile, note)
		return nil
	case settled:
		tenant = accepted
	default:
		if found {
			tenant, err = p.checkTenant(ctx, pol, tenantFile, tenantData, consumer, nonce, pinned)
		}
		if tenant == nil && accepted != nil {
			// An unsigned, missing or refused Tenant never withdraws a
			// working Identity: only the spec revokes.
			tenant = accepted
			switch {
			case rotating != "":
				note += fmt.Sprintf("; %s rotated its key from %s to %s (a statement signed by the old key): the Tenant accepted for the old key and what it was granted stay until a Tenant for the new key verifies in %s",
					consumer, rotating, p.trusted[consumer].info.Fingerprint, tenantFile)
				if err != nil {
					note += fmt.Sprintf(" (not yet: %v (%s))", err, artifactReason(err))
				}
			case err != nil:
				note += fmt.Sprintf("; kept the accepted Tenant: %v (%s)", err, artifactReason(err))
			default:
				note += fmt.Sprintf("; kept the accepted Tenant: %s is missing", tenantFile)
			}
			err = nil
		}
		if err != nil {
			return p.refused(st, layout.StepNonceSent, err)
		}
	}
	pub, keyDER, _ := handshake.ParsePublicKey(tenant.Spec.PublicKey)
	held := tenant == accepted && rotating != ""

	identity, err := p.identityFor(ctx, consumer, tenant, keyDER)
	if err != nil {
		return err
	}
	if err := p.put(layout.InboxPath(consumer, p.self, layout.IdentityFile), identity); err != nil {
		return err
	}
	condition := authv1beta1.TenantCondition(pr.Condition())
	grants, err := p.answerSlices(ctx, consumer, pr.Slices, keyDER, condition, held, st)
	if err != nil {
		return err
	}
	peering.Tenant, peering.Epoch = tenant, tenantNonce(tenant, nonce).Epoch
	peering.Condition, peering.Grants = condition, grants

	_, notAfter, _ := handshake.CertificateValidity(identity.Spec.AuthParams.SignedCRT)
	msg := fmt.Sprintf("identity issued to %s; certificate valid until %s", consumer, notAfter.UTC().Format(time.RFC3339))
	// The same words every pass, first or later: a status that changes with
	// nothing else would commit every pass.
	switch pol {
	case schema.PolicyToken:
		msg += "; token accepted"
	case schema.PolicyOpen:
		fp, _ := handshake.Fingerprint(pub)
		msg += fmt.Sprintf("; open policy: first key %s accepted and pinned", fp)
	}
	if condition != authv1beta1.TenantConditionActive {
		msg += fmt.Sprintf("; tenant %s", condition)
	}
	msg += cappedLifetimeNote(identity.Spec.AuthParams.SignedCRT, p.terms.certificateLifetime, consumer)
	msg += note
	p.out.Certificates = append(p.out.Certificates, Certificate{Consumer: consumer, Provider: p.self, Role: layout.RoleProvider, NotAfter: notAfter})
	reason := reasons.IdentityIssued
	if held {
		reason = reasons.KeyRotationInProgress
	}
	ready(st, layout.StepIdentityIssued, reason, "%s", msg)
	return nil
}

// rotatedFrom is the fingerprint of accepted's key when consumer's
// published cluster.yaml carries a rotation statement signed by that key
// (layout.ClusterInfo.VerifyRotation), else "". A statement is the old
// key's own word that the new one replaces it, so the grant of the old key
// may stay until the new key answers; a key changed any other way (a
// re-pin after a lost key) gets no such grace. The certificate issued for
// the old key names the cluster ID as its CN, as the new one will: the
// bindings kept serve both.
func (p *pass) rotatedFrom(consumer string, accepted *authv1beta1.Tenant) string {
	t, ok := p.trusted[consumer]
	if !ok || t.info.Rotation == nil {
		return ""
	}
	old, _, err := handshake.ParsePublicKey(accepted.Spec.PublicKey)
	if err != nil {
		return ""
	}
	fp, err := handshake.Fingerprint(old)
	if err != nil || t.info.VerifyRotation(fp) != nil {
		return ""
	}
	return fp
}

// acceptedTenant is the Tenant of consumer this cluster verified and
// rendered in an earlier pass, or nil.
func (p *pass) acceptedTenant(consumer string) *authv1beta1.Tenant {
	file := render.Path(p.self, consumer, authv1beta1.TenantKind, consumer)
	data, found, err := p.read(file)
	if err != nil || !found {
		return nil
	}
	t, err := artifact.DecodeTenant(file, data)
	if err != nil {
		return nil
	}
	return t
}

func sameTenant(file string, data []byte, accepted *authv1beta1.Tenant) bool {
	t, err := artifact.DecodeTenant(file, data)
	if err != nil {
		return false
	}
	return bytes.Equal(t.Spec.PublicKey, accepted.Spec.PublicKey) && bytes.Equal(t.Spec.CSR, accepted.Spec.CSR) &&
		bytes.Equal(t.Spec.Signature, accepted.Spec.Signature)
}

// nonceFor is the nonce consumer must answer: the current epoch's from the
// pin store, or a new epoch's once the current one expired without a
// settled Tenant. An epoch is the Unix second it was issued at, so epochs
// never repeat, not even after a revocation deleted every artifact; and the
// epochs live in the backend, never read back from the repo, so an old
// nonce.yaml put back by a repo writer changes nothing. answered is the
// epoch of a settled Tenant, adopted when the pin store has no record (a
// store created after the peering was accepted).
func (p *pass) nonceFor(consumer string, settled bool, answered uint64) (artifact.Nonce, error) {
	pin := p.pins.Peer(consumer)
	expires := p.in.Now.Add(p.terms.nonceLifetime).UTC().Truncate(time.Second)
	switch {
	case pin.Nonce == nil && settled && answered != 0:
		pin.Issue(answered, expires)
	case pin.Nonce == nil:
		pin.Issue(uint64(max(p.in.Now.Unix(), 1)), expires)
	case !settled && !pin.Nonce.Expires.IsZero() && !p.in.Now.Before(pin.Nonce.Expires):
		pin.Issue(max(uint64(max(p.in.Now.Unix(), 1)), pin.Nonce.Epoch+1), expires)
	}
	n := artifact.Nonce{Epoch: pin.Nonce.Epoch, Expires: pin.Nonce.Expires}
	value, err := p.in.Backend.Nonce(consumer, n.Epoch)
	if err != nil {
		return n, fmt.Errorf("nonce for %s: %w", consumer, err)
	}
	n.Value = value
	return n, nil
}

// tenantNonce is the nonce a verified Tenant answered: the current one, or
// for a settled Tenant kept past its nonce's expiry, the one it signed.
func tenantNonce(t *authv1beta1.Tenant, current artifact.Nonce) artifact.Nonce {
	if e, err := artifact.TenantEpoch("", t); err == nil && e != current.Epoch {
		return artifact.Nonce{Epoch: e}
	}
	return current
}

// checkTenant runs every check of a Tenant not accepted before: the nonce
// epoch against the ones this provider issued, the signature, CSR and key
// against the pinned key, and the token policy's proof.
func (p *pass) checkTenant(ctx context.Context, pol, file string, data []byte, consumer string, nonce artifact.Nonce, pinned []byte) (*authv1beta1.Tenant, error) {
	// The epoch first: a Tenant over an expired nonce is refused as such,
	// not as a signature that happens not to match the current nonce.
	if err := p.checkEpoch(file, data, consumer, nonce); err != nil {
		return nil, err
	}
	c, _ := p.in.Spec.Cluster(consumer)
	tenant, err := artifact.VerifyTenant(file, data, artifact.TenantCheck{
		ConsumerID: consumer, Nonce: nonce.Value, PinnedKeyDER: pinned, Fingerprint: c.Fingerprint, Cache: p.in.Cache.verifier(),
	})
	if err != nil {
		return nil, err
	}
	if pol == schema.PolicyToken {
		if err := p.checkToken(ctx, file, tenant, consumer, nonce); err != nil {
			return nil, err
		}
	}
	return tenant, nil
}

// checkEpoch refuses a Tenant answering another nonce epoch than n's: one
// this provider issued before is NonceExpired (an honest late answer), any
// other NonceReplayed.
func (p *pass) checkEpoch(file string, data []byte, consumer string, n artifact.Nonce) error {
	t, err := artifact.DecodeTenant(file, data)
	if err != nil {
		return err
	}
	e, err := artifact.TenantEpoch(file, t)
	if err != nil {
		return err
	}
	switch {
	case e == n.Epoch:
		return nil
	case e < n.Epoch && p.pins.Peer(consumer).WasIssued(e):
		return &artifact.Error{File: file, Field: "metadata.annotations", Reason: reasons.NonceExpired,
			Err: fmt.Errorf("answers nonce epoch %d; that nonce expired and epoch %d was issued", e, n.Epoch)}
	default:
		return &artifact.Error{File: file, Field: "metadata.annotations", Reason: reasons.NonceReplayed,
			Err: fmt.Errorf("answers nonce epoch %d, which this provider did not issue or no longer accepts (current epoch %d)", e, n.Epoch)}
	}
}

// checkToken applies the token policy: the Tenant proves it holds the token
// shared out of band (Liqo v0.2's Refused / EmptyRefused otherwise).
func (p *pass) checkToken(ctx context.Context, file string, t *authv1beta1.Tenant, consumer string, n artifact.Nonce) error {
	token, err := p.in.Backend.Token(ctx, consumer)
	if err != nil {
		// The status goes into the shared repo: name the remedy, not where
		// this cluster keeps its tokens.
		why := fmt.Errorf("no token shared with %s on this cluster (gitpeer token generate --peer %s): %w", consumer, consumer, backend.ErrNoToken)
		if !errors.Is(err, backend.ErrNoToken) {
			why = fmt.Errorf("the token store of this cluster could not be read; see its reconciler's log")
		}
		return &artifact.Error{File: file, Reason: artifact.ReasonTokenRefused, Err: why}
	}
	if reason := artifact.CheckTokenProof(t.Annotations[artifact.AnnotationTokenProof], token, n.Value); reason != "" {
		what := "wrong token proof"
		if reason == artifact.ReasonTokenEmptyRefused {
			what = fmt.Sprintf("no token proof: %s holds no token for %s; its admin stores the one %s's admin generated (gitpeer token generate --cluster %s --peer %s) with gitpeer token set --cluster %s --peer %s",
				consumer, p.self, p.self, p.self, consumer, consumer, p.self)
		}
		return &artifact.Error{File: file, Field: "metadata.annotations", Reason: reason, Err: fmt.Errorf("%s (%s)", what, artifact.AnnotationTokenProof)}
	}
	return nil
}

// identityFor returns the Identity for a verified Tenant: the one already in
// the repo while its certificate still verifies and is not due for renewal
// (re-signing every pass would commit every pass), else a freshly signed one.
func (p *pass) identityFor(ctx context.Context, consumer string, tenant *authv1beta1.Tenant, keyDER []byte) (*authv1beta1.Identity, error) {
	file := layout.InboxPath(consumer, p.self, layout.IdentityFile)
	var prev *authv1beta1.AuthParams
	if data, found, err := p.read(file); err != nil {
		return nil, err
	} else if found {
		if old, err := artifact.DecodeIdentity(file, data); err == nil {
			prev = &old.Spec.AuthParams
		}
	}
	params, err := p.authParams(ctx, file, prev, tenant.Spec.CSR, keyDER, consumer, handshake.ControlPlaneOrganization)
	if err != nil {
		return nil, fmt.Errorf("sign CSR of %s: %w", consumer, err)
	}
	return liqo.ControlPlaneIdentity(consumer, p.self, *params), nil
}

// authParams are the authParams of a certificate for csr with subject cn/org:
// prev's while its certificate still serves (re-signing every pass would
// commit every pass), else those file holds in the pending proposal while
// they serve (re-signing would rebuild the proposal every pass), else a
// freshly signed one.
func (p *pass) authParams(ctx context.Context, file string, prev *authv1beta1.AuthParams, csr, keyDER []byte, cn, org string) (*authv1beta1.AuthParams, error) {
	want := authv1beta1.AuthParams{APIServer: p.me.APIServer, CA: p.in.Backend.CABundle()}
	if prev != nil && p.reusable(*prev, want, keyDER, cn, org) {
		return prev, nil
	}
	if pending := p.pendingParams(file); pending != nil && p.reusable(*pending, want, keyDER, cn, org) {
		return pending, nil
	}
	cert, err := p.in.Backend.SignCSR(ctx, csr, p.terms.certificateLifetime)
	if err != nil {
		return nil, err
	}
	want.SignedCRT = cert
	return &want, nil
}

// reusable reports whether a certificate signed earlier still serves: same
// API server and CA, verifies for the key and subject, not due for renewal.
func (p *pass) reusable(old, want authv1beta1.AuthParams, keyDER []byte, cn, org string) bool {
	if old.APIServer != want.APIServer || !bytes.Equal(old.CA, want.CA) {
		return false
	}
	if p.in.Cache.verifier().VerifyClientCertificate(old.SignedCRT, want.CA, keyDER, cn, org, p.in.Now) != nil {
		return false
	}
	block, _ := pem.Decode(old.SignedCRT)
	if block == nil {
		return false
	}
	crt, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return false
	}
	return p.in.Now.Before(renewAt(crt.NotBefore, crt.NotAfter, cn, crt.SerialNumber.String()))
}

// answerSlices decides every slice request consumer put in this cluster's
// inbox and writes each answer (the ResourceSlice with Liqo's status) into
// the consumer's inbox. A slice is granted only as the spec lists it for
// the peering (listed: name, class, resources) and within the class totals
// (policy.Grant), the slices decided in the spec's order; anything else is
// denied with a named reason. A request named as Liqo names no slice, or
// one the signer does not sign, is that slice's status only: the pass goes
// on for the other slices and peers. It returns the slices granted, with
// the class and resources each was granted, for the admission policy.
//
// held is set while consumer's key rotation is in progress and keyDER is
// its previous key's: requests already signed for the new key wait for the
// new Tenant, and the answers given before are kept as keepAnswers keeps
// them, so a slice granted stays granted through the rotation.
func (p *pass) answerSlices(ctx context.Context, consumer string, listed []schema.Slice, keyDER []byte, condition authv1beta1.TenantCondition, held bool, st *peeringObject) ([]admission.Grant, error) {
	dir := layout.ClusterPath(p.self, layout.InboxDir, consumer)
	entries, err := fs.ReadDir(p.in.Tree, dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	var names []string
	var refused []layout.SliceStatus
	for _, e := range entries {
		name, ok := artifact.SliceName(e.Name())
		if !ok || e.IsDir() {
			continue
		}
		if err := policy.CheckName(name); err != nil {
			refused = append(refused, refusedName(name, err))
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	if held {
		names = nil
	}
	kept, err := p.keepAnswers(consumer, names, keyDER)
	if err != nil {
		return nil, err
	}
	spec := specSlices(listed)
	budget := policy.NewBudget(p.terms.classes)
	decided := map[string]layout.SliceStatus{}
	var grants []admission.Grant
	grant := func(g admission.Grant) { grants = append(grants, g) }
	for _, name := range spec.order(names, kept) {
		var s layout.SliceStatus
		if k, ok := kept[name]; ok {
			s, err = p.keepAnswer(name, k, spec.listed[name], condition, budget, grant)
		} else {
			s, err = p.answerSlice(ctx, consumer, name, spec.listed[name], keyDER, condition, budget, grant)
		}
		if err != nil {
			return nil, err
		}
		decided[name] = s
	}
	// The status lists kept decisions first, then requests, each in name
	// order; the spec's order is only the order of the decisions.
	for _, name := range sortedKeys(kept) {
		st.status.Slices = append(st.status.Slices, decided[name])
	}
	for _, name := range names {
		if _, ok := kept[name]; !ok {
			st.status.Slices = append(st.status.Slices, decided[name])
		}
	}
	st.status.Slices = append(st.status.Slices, refused...)
	return grants, nil
}

// answerSlice decides consumer's request for slice name (listed: the
// spec's slice of that name, nil when the spec lists none), writes the
// answer and returns the slice's status.
func (p *pass) answerSlice(ctx context.Context, consumer, name string, listed *policy.Listed, keyDER []byte, condition authv1beta1.TenantCondition, budget *policy.Budget, grant func(admission.Grant)) (layout.SliceStatus, error) {
	file := path.Join(layout.ClusterPath(p.self, layout.InboxDir, consumer), artifact.SliceFile(name))
	data, _, err := p.read(file)
	if err != nil {
		// A request the signed view cannot read is that slice's problem.
		return layout.SliceStatus{Name: name, Authentication: "Denied", Resources: "Denied",
			Reason: reasons.MalformedArtifact, Message: err.Error()}, nil
	}
	answerFile := layout.InboxPath(consumer, p.self, artifact.SliceAnswerFile(name))
	prev := p.previousAnswer(answerFile)
	req, err := artifact.VerifySliceRequestCached(file, data, name, consumer, p.self, keyDER, p.in.Cache.verifier())
	if err != nil {
		var ae *artifact.Error
		if !errors.As(err, &ae) {
			return layout.SliceStatus{}, err
		}
		decoded, derr := artifact.DecodeSlice(file, data)
		if derr != nil || ae.Reason == reasons.MalformedArtifact {
			// Nothing Liqo could answer: say so in the status only.
			return layout.SliceStatus{Name: name, Authentication: "Denied", Resources: "Denied",
				Reason: liqo.ReasonSliceAuthDenied, Message: ae.Error()}, nil
		}
		ans := decoded.DeepCopy()
		ans.Status = authv1beta1.ResourceSliceStatus{Conditions: p.sliceConditions(prev,
			sliceCond(authv1beta1.ResourceSliceConditionTypeAuthentication, false, liqo.ReasonSliceAuthDenied, ae.Error()),
			sliceCond(authv1beta1.ResourceSliceConditionTypeResources, false, liqo.ReasonSliceResourcesDenied, "authentication denied"))}
		if err := p.put(answerFile, ans); err != nil {
			return layout.SliceStatus{}, err
		}
		return sliceStatus(ans), nil
	}
	// An acceptance in an older outbox of ours, restored from history, is
	// not a decision we stand by (a cordon since).
	wasAccepted := prev != nil && reflect.DeepEqual(prev.Spec, req.Spec) && artifact.SliceAccepted(prev) && !p.outboxRolledBack(consumer)
	d := policy.Grant(p.terms.classes, condition, listed, policy.Request{Name: name, Class: string(req.Spec.Class), Resources: req.Spec.Resources, WasAccepted: wasAccepted}, budget)
	ans := req.DeepCopy()
	ans.Status.Conditions = p.sliceConditions(prev,
		sliceCond(authv1beta1.ResourceSliceConditionTypeAuthentication, true, liqo.ReasonSliceAuthAccepted, "ResourceSlice authentication accepted"),
		sliceCond(authv1beta1.ResourceSliceConditionTypeResources, d.Accepted, d.Reason, d.Message))
	if d.Accepted {
		// Only a granted slice gets a certificate: nothing is signed that
		// would not be honoured.
		var prevParams *authv1beta1.AuthParams
		if prev != nil {
			prevParams = prev.Status.AuthParams
		}
		params, err := p.authParams(ctx, answerFile, prevParams, req.Spec.CSR, keyDER, handshake.ResourceSliceCommonName(req.Name, consumer), consumer)
		if err != nil {
			return p.notSigned(answerFile, prev, req, err), nil
		}
		ans.Status.Resources = d.Granted
		ans.Status.AuthParams = params
		grant(admission.Grant{Name: name, Class: string(req.Spec.Class), Resources: req.Spec.Resources, Granted: d.Granted})
	}
	if err := p.put(answerFile, ans); err != nil {
		return layout.SliceStatus{}, err
	}
	return sliceStatus(ans), nil
}

// keepAnswers finds every answer this cluster gave consumer whose request
// is not among the readable ones (requested) although the consumer did not
// withdraw it: a request a repo writer changed, deleted or hid (by breaking
// or rolling back the consumer's manifest) never withdraws a decision. Only
// the consumer withdraws a request, by no longer listing it in the manifest
// it signs. An acceptance is kept only while its certificate is valid for
// the consumer's key (keyDER): one for a key the consumer rotated out is
// never put forward again. keepAnswer then decides each again under the
// spec: the answers are returned by slice name, not yet written.
func (p *pass) keepAnswers(consumer string, requested []string, keyDER []byte) (map[string]keptAnswer, error) {
	dir := layout.ClusterPath(p.self, layout.InboxDir, consumer)
	m, verified := p.view.Verified(consumer, dir)
	answers, err := fs.ReadDir(p.in.Tree, layout.ClusterPath(consumer, layout.InboxDir, p.self))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	out := map[string]keptAnswer{}
	for _, e := range answers {
		name, ok := artifact.SliceAnswerName(e.Name())
		if !ok || e.IsDir() || slices.Contains(requested, name) || policy.CheckName(name) != nil {
			continue
		}
		request := path.Join(dir, artifact.SliceFile(name))
		if verified {
			if _, listed := m.Lookup(artifact.SliceFile(name)); !listed {
				continue // withdrawn by the consumer
			}
		}
		answerFile := layout.InboxPath(consumer, p.self, e.Name())
		data, found, err := p.read(answerFile)
		if err != nil || !found {
			return nil, err
		}
		prev, err := artifact.DecodeSlice(answerFile, data)
		if err != nil {
			continue // not an answer this cluster could have signed
		}
		if a := prev.Status.AuthParams; a != nil && p.in.Cache.verifier().VerifyClientCertificate(a.SignedCRT, p.in.Backend.CABundle(), keyDER,
			handshake.ResourceSliceCommonName(name, consumer), consumer, p.in.Now) != nil {
			continue
		}
		if p.outboxRolledBack(consumer) && !p.grantableNow(consumer, name, prev) {
			continue // an acceptance from an older outbox of ours, restored from history
		}
		why, ok := p.view.IgnoredReason(consumer, dir, request)
		if !ok {
			why = "missing"
		}
		out[name] = keptAnswer{file: answerFile, data: data, prev: prev, note: fmt.Sprintf("%s is %s", request, why)}
	}
	return out, nil
}

func (p *pass) previousAnswer(file string) *authv1beta1.ResourceSlice {
	data, found, err := p.read(file)
	if err != nil || !found {
		return nil
	}
	rs, err := artifact.DecodeSlice(file, data)
	if err != nil {
		return nil
	}
	return rs
}

func sliceCond(t authv1beta1.ResourceSliceConditionType, ok bool, reason, message string) authv1beta1.ResourceSliceCondition {
	s := authv1beta1.ResourceSliceConditionDenied
	if ok {
		s = authv1beta1.ResourceSliceConditionAccepted
	}
	return authv1beta1.ResourceSliceCondition{Type: t, Status: s, Reason: reason, Message: message}
}

// sliceConditions stamps conditions with a transition time: the previous
// answer's while the condition holds, now when it changes.
func (p *pass) sliceConditions(prev *authv1beta1.ResourceSlice, conds ...authv1beta1.ResourceSliceCondition) []authv1beta1.ResourceSliceCondition {
	now := metav1.NewTime(p.in.Now.UTC().Truncate(time.Second))
	for i := range conds {
		conds[i].LastTransitionTime = now
		if prev == nil {
			continue
		}
		if old := artifact.SliceCondition(prev, conds[i].Type); old != nil && old.Status == conds[i].Status &&
			old.Reason == conds[i].Reason && old.Message == conds[i].Message {
			conds[i].LastTransitionTime = old.LastTransitionTime
		}
	}
	return conds
}

func sliceStatus(rs *authv1beta1.ResourceSlice) layout.SliceStatus {
	s := layout.SliceStatus{Name: rs.Name, Authentication: "Pending", Resources: "Pending"}
	if c := artifact.SliceCondition(rs, authv1beta1.ResourceSliceConditionTypeAuthentication); c != nil {
		s.Authentication = string(c.Status)
		if c.Status == authv1beta1.ResourceSliceConditionDenied {
			s.Reason, s.Message = c.Reason, c.Message
		}
	}
	if c := artifact.SliceCondition(rs, authv1beta1.ResourceSliceConditionTypeResources); c != nil {
		s.Resources = string(c.Status)
		if s.Reason == "" {
			s.Reason, s.Message = c.Reason, c.Message
			if why := policy.ReasonOf(c.Message); why != "" && c.Status == authv1beta1.ResourceSliceConditionDenied {
				s.Reason = why // gitpeer's word for a denial Liqo has none for
			}
		}
	}
	return s
}
