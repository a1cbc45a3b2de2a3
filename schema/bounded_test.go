package schema

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// loadBoundedEnv, set to a directory, makes this test binary a process
// that only runs LoadBounded on it, for tests that kill such a process.
const loadBoundedEnv = "SCHEMA_TEST_LOAD_BOUNDED"

// TestMain lets this test binary serve as LoadBounded's evaluator.
func TestMain(m *testing.M) {
	RunEvaluatorIfChild()
	if dir := os.Getenv(loadBoundedEnv); dir != "" {
		_, _, err := LoadBounded(context.Background(), dir, Limits{Timeout: 10 * time.Minute})
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// timeBomb builds 10^8 copies of a ten-element list: CUE v0.17.1 evaluates
// it for hours, slowly growing (about 250 MiB after 20 s).
const timeBomb = `// 10^8 lists of ten
l: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
a: [for _ in l for _ in l for _ in l for _ in l for _ in l for _ in l for _ in l for _ in l {l}]
`

// memoryBomb builds a struct of 10^7 fields: CUE v0.17.1 grows by about
// 300 MiB a second evaluating it.
const memoryBomb = `l: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
a: {for i, _ in l for j, _ in l for k, _ in l for m, _ in l for n, _ in l for o, _ in l for p, _ in l {"\(i)\(j)\(k)\(m)\(n)\(o)\(p)": l}}
`

// defused is timeBomb with two comprehension levels instead of eight: the
// same constructs, cheap. It is invalid (fields the schema does not allow),
// which a bounded evaluation must report as Load does.
const defused = `l: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
a: [for _ in l for _ in l {l}]
`

func TestLoadBoundedAgreesWithLoad(t *testing.T) {
	lim := Limits{Timeout: time.Minute}
	tests := []struct {
		name  string
		files map[string]string
	}{
		{"valid CUE", map[string]string{"peering.cue": demoCUE}},
		{"valid YAML", map[string]string{"peering.yaml": demoYAML}},
		{"empty lists and structs", map[string]string{"peering.cue": `clusters: [{id: "a", provider: {classes: []}}, {id: "b", provider: {}}]
peerings: [{consumer: "a", provider: "b", slices: [{name: "s", resources: {}}]}, {consumer: "b", provider: "a", slices: []}]
`}},
		{"empty spec", map[string]string{"peering.yaml": ""}},
		{"invalid CUE", map[string]string{"peering.cue": "clusters: [{id: \"Alpha\"}, {id: \"b\"}]\npeerings: [{consumer: \"a\", provider: \"b\"}]\n"}},
		{"invalid YAML", map[string]string{"peering.yaml": "clusters:\n- id: Alpha\n  extra: 1\n"}},
		{"CUE syntax error", map[string]string{"peering.cue": "clusters: [\n"}},
		{"defused bomb", map[string]string{"peering.cue": defused}},
		{"no spec file", map[string]string{"README.md": ""}},
		{"two spec files", map[string]string{"peering.cue": demoCUE, "peering.yaml": demoYAML}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, tc.files)
			want, wantPath, wantErr := Load(dir)
			got, gotPath, gotErr := LoadBounded(context.Background(), dir, lim)
			if gotPath != wantPath {
				t.Errorf("path = %q, want %q", gotPath, wantPath)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("spec = %#v\nwant %#v", got, want)
			}
			if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
				t.Fatalf("error = %v\nwant %v", gotErr, wantErr)
			}
			var wantProblems, gotProblems *Error
			if errors.As(wantErr, &wantProblems) != errors.As(gotErr, &gotProblems) {
				t.Fatalf("error is %T, want %T", gotErr, wantErr)
			}
			if wantProblems != nil && !reflect.DeepEqual(gotProblems.Problems, wantProblems.Problems) {
				t.Errorf("problems = %+v\nwant %+v", gotProblems.Problems, wantProblems.Problems)
			}
			if errors.Is(gotErr, fs.ErrNotExist) != errors.Is(wantErr, fs.ErrNotExist) {
				t.Errorf("errors.Is(%v, fs.ErrNotExist) differs from Load's", gotErr)
			}
		})
	}
}

func TestLoadBoundedReportsProblemsWithPositions(t *testing.T) {
	dir := writeFiles(t, map[string]string{"peering.cue": "clusters: [{id: \"Alpha\"}]\n"})
	_, path, err := LoadBounded(context.Background(), dir, DefaultLimits)
	var perr *Error
	if !errors.As(err, &perr) || len(perr.Problems) != 1 {
		t.Fatalf("error = %v, want one problem", err)
	}
	if p := perr.Problems[0]; p.File != path || p.Line != 1 || p.Column != 17 || p.Path != "clusters[0].id" {
		t.Errorf("problem = %+v, want %s:1:17 at clusters[0].id", p, path)
	}
}

func TestLoadBoundedNeedsTheEvaluatorHook(t *testing.T) {
	hooked.Store(false)
	defer hooked.Store(true)
	dir := writeFiles(t, map[string]string{"peering.cue": demoCUE})
	_, _, err := LoadBounded(context.Background(), dir, DefaultLimits)
	if err == nil || !strings.Contains(err.Error(), "RunEvaluatorIfChild") {
		t.Fatalf("error = %v, want one naming RunEvaluatorIfChild", err)
	}
}

func TestCostErrorNamesTheSpecTheLimitAndTheFlag(t *testing.T) {
	for _, tc := range []struct {
		err  *CostError
		want string
	}{
		{&CostError{File: "repo/peering.cue", Resource: ResourceTime, Limits: DefaultLimits},
			"repo/peering.cue: evaluation exceeded 1m0s (raise --spec-timeout)"},
		{&CostError{File: "repo/peering.cue", Resource: ResourceMemory, Limits: DefaultLimits},
			"repo/peering.cue: evaluation used more than 2Gi of memory (raise --spec-memory)"},
		{&CostError{File: "peering.yaml", Resource: ResourceMemory, Limits: Limits{MemoryBytes: 1536 << 20}},
			"peering.yaml: evaluation used more than 1536Mi of memory (raise --spec-memory)"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
		if !errors.Is(fmt.Errorf("wrapped: %w", tc.err), ErrSpecTooCostly) {
			t.Errorf("%v is not ErrSpecTooCostly", tc.err)
		}
	}
}

// largeSpecs are specs of 1,000 clusters and 10,000 peerings, as big as a
// real spec gets: written out in YAML near the 1 MiB size limit (every
// cluster a provider with a fingerprint and a class, one peering in five
// with a slice), and generated by CUE comprehensions.
func largeSpecs() map[string]string {
	var y strings.Builder
	y.WriteString("clusters:\n")
	for i := range 1000 {
		fmt.Fprintf(&y, "- id: cluster-%04d\n  fingerprint: sha256:%064x\n  provider: {certificateLifetime: 720h, classes: [{name: gold, caps: {cpu: \"8\", memory: 16Gi}}]}\n", i, i)
	}
	y.WriteString("peerings:\n")
	for i := range 10000 {
		consumer, provider := i%1000, (i%1000+1+i/1000)%1000
		if i%5 == 0 {
			fmt.Fprintf(&y, "- {consumer: cluster-%04d, provider: cluster-%04d, slices: [{name: s, class: gold, resources: {cpu: \"2\"}}]}\n", consumer, provider)
		} else {
			fmt.Fprintf(&y, "- {consumer: cluster-%04d, provider: cluster-%04d}\n", consumer, provider)
		}
	}
	const generated = `import "list"

let ids = [for i in list.Range(0, 1000, 1) {"cluster-\(i)"}]
clusters: [for x in ids {id: x, provider: classes: [{name: "gold", caps: {cpu: "8", memory: "16Gi"}}]}]
peerings: [for i, c in ids for j in list.Range(1, 11, 1) {
	consumer: c
	provider: ids[mod(i+j, 1000)]
	slices: [{name: "s", class: "gold", resources: cpu: "2"}]
}]
`
	return map[string]string{"peering.yaml": y.String(), "peering.cue": generated}
}

func TestLoadBoundedTakesALargeSpecUnderDefaultLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("evaluates two large specs: seconds each")
	}
	for name, src := range largeSpecs() {
		t.Run(name, func(t *testing.T) {
			if len(src) > maxSpecSize {
				t.Fatalf("the spec is %d bytes, over the size limit", len(src))
			}
			dir := writeFiles(t, map[string]string{name: src})
			start := time.Now()
			spec, _, err := LoadBounded(context.Background(), dir, DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d bytes in %s", len(src), time.Since(start))
			if len(spec.Clusters) != 1000 || len(spec.Peerings) != 10000 {
				t.Fatalf("%d clusters, %d peerings", len(spec.Clusters), len(spec.Peerings))
			}
			if last := spec.Peerings[9999]; last.Provider == "" || len(spec.Clusters[999].Provider.Classes) != 1 {
				t.Errorf("incomplete spec: last peering %+v, last cluster %+v", last, spec.Clusters[999])
			}
		})
	}
}
