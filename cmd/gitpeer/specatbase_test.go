package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spf13/cobra"

	"github.com/gitpeer/gitpeer/schema"
)

// The spec at --base is the spec read at HEAD when the file has the same
// name and the very same bytes (it is not evaluated again), and is the
// base's own evaluation otherwise: one byte of difference, or another file
// name, and head's spec is not served.
func TestSpecAtBaseIsHeadsOnlyForTheSameFile(t *testing.T) {
	work := signedRepo(t)
	cmd := &cobra.Command{}
	addSpecLimitFlags(cmd)
	cmd.SetContext(context.Background())
	file := filepath.Join(work, "peering.cue") // as schema.FindSpec names it
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := specAtBase(cmd, work, "HEAD", nil)
	if err != nil {
		t.Fatal(err)
	}
	headSpec, err := schema.Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := specAtBase(cmd, work, "HEAD", &readSpec{file, data, headSpec})
	if err != nil || got != headSpec {
		t.Fatalf("same bytes: %p, %v; want head's spec %p", got, err, headSpec)
	}
	if !reflect.DeepEqual(headSpec, fresh) {
		t.Fatalf("head's spec %+v is not the base's evaluation %+v", headSpec, fresh)
	}
	changed := append([]byte{}, data...)
	changed[len(changed)-2] ^= 1
	for name, head := range map[string]*readSpec{
		"a byte changed":  {file, changed, &schema.Spec{}},
		"a byte appended": {file, append(append([]byte{}, data...), ' '), &schema.Spec{}},
		"another file":    {filepath.Join(work, "peering.yaml"), data, &schema.Spec{}},
		"no spec at head": {file, data, nil},
	} {
		got, err := specAtBase(cmd, work, "HEAD", head)
		if err != nil || got == head.spec || !reflect.DeepEqual(got, fresh) {
			t.Errorf("%s: %+v, %v; want the base's own evaluation %+v", name, got, err, fresh)
		}
	}
}
