package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gitpeer/gitpeer/schema"
)

// addSpecLimitFlags adds --spec-timeout and --spec-memory, the limits of a
// spec's evaluation, to a command that loads the spec.
func addSpecLimitFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Duration(schema.TimeoutFlag, schema.DefaultLimits.Timeout, "time the evaluation of the peering spec may take")
	mem := byteSize(schema.DefaultLimits.MemoryBytes)
	f.Var(&mem, schema.MemoryFlag, "memory the evaluation of the peering spec may use (resident, e.g. 2Gi or 512Mi)")
}

// specLimits are the limits set by the flags of addSpecLimitFlags.
func specLimits(cmd *cobra.Command) (schema.Limits, error) {
	f := cmd.Flags()
	timeout, err := f.GetDuration(schema.TimeoutFlag)
	if err != nil {
		return schema.Limits{}, err
	}
	if timeout <= 0 {
		return schema.Limits{}, fmt.Errorf("--%s must be positive, got %s", schema.TimeoutFlag, timeout)
	}
	mem, ok := f.Lookup(schema.MemoryFlag).Value.(*byteSize)
	if !ok {
		return schema.Limits{}, fmt.Errorf("--%s is not a byte size", schema.MemoryFlag)
	}
	return schema.Limits{Timeout: timeout, MemoryBytes: uint64(*mem)}, nil
}

// boundedSpecLoader parses a spec with schema.ParseBounded under lim, for
// runner.Runner.LoadSpec.
func boundedSpecLoader(lim schema.Limits) func(context.Context, string, []byte) (*schema.Spec, error) {
	return func(ctx context.Context, file string, data []byte) (*schema.Spec, error) {
		return schema.ParseBounded(ctx, file, data, lim)
	}
}

// byteSize is a flag value of a positive number of bytes, written as a
// Kubernetes quantity ("2Gi", "512Mi", "3G") or a plain number.
type byteSize uint64

func (b *byteSize) String() string {
	return resource.NewQuantity(int64(*b), resource.BinarySI).String()
}

func (b *byteSize) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("not a quantity of bytes such as 2Gi or 512Mi")
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return fmt.Errorf("not a positive whole number of bytes")
	}
	*b = byteSize(n)
	return nil
}

func (*byteSize) Type() string { return "bytes" }
