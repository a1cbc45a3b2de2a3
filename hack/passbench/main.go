// Command passbench times a command as a process, hyperfine-style: it runs
// the command -n times (after -warmup untimed runs, and -prepare before each
// run, untimed) and prints min/median/max of the wall time and of the CPU
// time (user + system from wait4's rusage, which includes the children the
// process waited for, such as git). It exists to measure
// `gitpeer reconcile --once` per pass (issue 21); see hack/passbench/run.sh.
//
// Usage: passbench [-n N] [-warmup W] [-prepare 'sh command'] -- command args...
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"time"
)

func main() {
	n := flag.Int("n", 10, "timed runs")
	warmup := flag.Int("warmup", 1, "untimed runs first")
	prepare := flag.String("prepare", "", "sh -c command run (untimed) before each run")
	label := flag.String("label", "", "name printed with the figures")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: passbench [-n N] [-warmup W] [-prepare CMD] [-label L] -- command args...")
		os.Exit(2)
	}
	var walls, cpus []time.Duration
	for i := 0; i < *warmup+*n; i++ {
		if *prepare != "" {
			if out, err := exec.Command("sh", "-c", *prepare).CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "prepare: %v\n%s", err, out)
				os.Exit(1)
			}
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stderr = os.Stderr
		start := time.Now()
		out, err := cmd.Output()
		wall := time.Since(start)
		if err != nil {
			fmt.Fprintf(os.Stderr, "run %d: %v\n%s", i, err, out)
			os.Exit(1)
		}
		if i < *warmup {
			continue
		}
		walls = append(walls, wall)
		cpus = append(cpus, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
	fmt.Printf("%s runs %d  wall %s  cpu %s\n", *label, *n, stats(walls), stats(cpus))
}

// stats formats min/median/max of ds in seconds.
func stats(ds []time.Duration) string {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	med := ds[len(ds)/2]
	if len(ds)%2 == 0 {
		med = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	return fmt.Sprintf("min %.3fs median %.3fs max %.3fs", ds[0].Seconds(), med.Seconds(), ds[len(ds)-1].Seconds())
}
