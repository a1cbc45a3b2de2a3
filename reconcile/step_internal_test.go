package reconcile

import (
	"strings"
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/gitpeer/gitpeer/internal/liqo/render"
)

// Every step's text is what commits carried before steps were values: the
// Gitpeer-Step trailers and subjects tools and tests read back. A kind
// added without a text fails here.
func TestStepTextsAreTheTrailers(t *testing.T) {
	want := map[StepKind]struct {
		step Step
		text string
	}{
		PublishOpenPGPKey:    {Step{}, "publish OpenPGP key"},
		RepublishClusterFile: {Step{Peer: "alpha"}, "republish alpha's cluster.yaml over an edit it did not sign"},
		PublishRolledKey:     {Step{}, "publish the rolled-over cluster key"},
		UpdateFluxKeys:       {Step{Peer: "alpha"}, "update the keys Flux verifies alpha's commits with"},
		SendNonce:            {Step{Peer: "beta"}, "send nonce to beta"},
		SendTenant:           {Step{Peer: "beta"}, "send tenant to beta"},
		RenewIdentity:        {Step{Peer: "beta"}, "renew identity of beta"},
		IssueIdentity:        {Step{Peer: "beta"}, "issue identity to beta"},
		AnswerSlice:          {Step{Peer: "beta", Name: "gpu"}, "answer slice gpu of beta"},
		RequestSlice:         {Step{Peer: "beta", Name: "gpu"}, "request slice gpu from beta"},
		AcceptSlice:          {Step{Peer: "beta", Name: "gpu"}, "accept slice gpu of beta"},
		AcceptIdentity:       {Step{Peer: "beta"}, "accept identity of beta"},
		UpdateTenant:         {Step{Peer: "beta"}, "update tenant of beta"},
		AcceptTenant:         {Step{Peer: "beta"}, "accept tenant of beta"},
		RenderClusterRoles:   {Step{}, "render Liqo cluster roles"},
		AdmitSlices:          {Step{Peer: "beta"}, "admit the granted slices of beta"},
		RemoveFromInbox:      {Step{Peer: "beta", Name: "x.txt"}, "remove x.txt from the inbox of beta"},
		Withdraw:             {Step{Peer: "beta", Name: "nonce"}, "withdraw nonce from beta"},
		RemoveObjects:        {Step{Peer: "beta"}, "remove objects for beta"},
		Remove:               {Step{Name: "liqo/beta/x.yaml"}, "remove liqo/beta/x.yaml"},
		SignWithdrawal:       {Step{Peer: "beta"}, "sign withdrawal for beta"},
		UpdateStatus:         {Step{}, "update status"},
	}
	for k := StepKind(1); ; k++ {
		c, ok := want[k]
		if !ok {
			if s := (Step{Kind: k}).String(); !strings.HasPrefix(s, "step of unknown kind") {
				t.Errorf("kind %d has the text %q and no case here", k, s)
			}
			break
		}
		c.step.Kind = k
		if got := c.step.String(); got != c.text {
			t.Errorf("kind %d: %q, want %q", k, got, c.text)
		}
	}
}

// The rendered objects that make a step of their own name it: a slice's
// objects the slice, a Tenant whether it replaces one; the rest go with
// another's step.
func TestObjectStepNamesTheSliceAndTheTenant(t *testing.T) {
	for _, c := range []struct {
		o       render.Object
		existed bool
		want    string
	}{
		{render.Object{Peer: "beta", Kind: authv1beta1.IdentityKind}, false, "accept identity of beta"},
		{render.Object{Peer: "beta", Kind: authv1beta1.IdentityKind, Slice: "pool"}, true, "accept slice pool of beta"},
		{render.Object{Peer: "beta", Kind: "ResourceSlice", Slice: "pool"}, false, "accept slice pool of beta"},
		{render.Object{Peer: "alpha", Kind: authv1beta1.TenantKind}, false, "accept tenant of alpha"},
		{render.Object{Peer: "alpha", Kind: authv1beta1.TenantKind}, true, "update tenant of alpha"},
		{render.Object{Peer: render.SharedDir, Kind: render.KindClusterRole}, false, "render Liqo cluster roles"},
		{render.Object{Peer: "alpha", Kind: render.KindNamespace}, false, ""},
		{render.Object{Peer: "alpha", Kind: render.KindValidatingAdmissionPolicy}, false, ""},
	} {
		s, ok := objectStep(c.o, c.existed)
		if got := s.String(); ok != (c.want != "") || ok && got != c.want {
			t.Errorf("%s %s (existed %t): %q %t, want %q", c.o.Kind, c.o.Peer, c.existed, got, ok, c.want)
		}
	}
}
