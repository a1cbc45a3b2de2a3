package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// commandExamples are the Example sections of the commands' help, keyed by
// command path. Each line runs as written (TestEveryCommandHasExamples
// parses every gitpeer command of them with the CLI's own flags): the
// writers from the directory that holds a clone ./peering of the peering
// repo and a cluster's state ./alpha-state, the readers from inside the
// clone.
var commandExamples = map[string]string{
	"gitpeer": `gitpeer demo                         # the whole flow on this machine, through a real Git repo
gitpeer validate && gitpeer status   # in a clone of a peering repo`,

	"gitpeer init": `# file backend: create alpha's state, write clusters/alpha/ into the clone to commit
gitpeer init --cluster alpha --api-server https://alpha.example:6443 --state-dir ./alpha-state --repo ./peering
# kubernetes backend: the key in Liqo's Secret, the cluster ID from Liqo
gitpeer init --backend kubernetes --repo ./peering`,

	"gitpeer validate": `gitpeer validate                              # the checkout in .: HEAD, and the worktree's spec if it differs
gitpeer validate peering.cue                  # the file as on disk
git show :peering.cue | gitpeer validate -    # the staged spec (examples/ci/pre-commit)
gitpeer validate --base origin/main           # and the live peerings the change revokes`,

	"gitpeer reconcile": `# one pass, as a CI job or a CronJob runs it
gitpeer reconcile --once --cluster alpha --repo ./peering.git --state-dir ./alpha-state
# the daemon, beside the cluster, with Flux's Git Secret mounted at /etc/gitpeer/git
gitpeer reconcile --cluster alpha --backend kubernetes --repo ssh://git@git.example.com/platform/peering.git --git-credentials /etc/gitpeer/git`,

	"gitpeer verify": `gitpeer verify                     # the checkout's HEAD, as each cluster's Flux would apply it
gitpeer verify --base origin/main  # only what a pull request adds: the required check`,

	"gitpeer status": `gitpeer status
gitpeer status --peering alpha/beta -o yaml
gitpeer status --write STATUS.md`,

	"gitpeer wait": `gitpeer wait --for=condition=Ready --peering alpha/beta --timeout 10m`,

	"gitpeer plan": `# what alpha's next pass would commit, without committing it
gitpeer plan --cluster alpha ./peering --state-dir ./alpha-state`,

	"gitpeer demo": `gitpeer demo
gitpeer demo --example three-clusters --dir ./gitpeer-demo
gitpeer demo --clusters 20 --concurrent`,

	"gitpeer schema": `gitpeer schema
gitpeer schema --json-schema > peering.schema.json`,

	"gitpeer codeowners": `gitpeer codeowners
gitpeer codeowners --write --host gitlab`,

	"gitpeer token": `gitpeer token generate --cluster beta --peer alpha --state-dir ./beta-state
gitpeer token set --cluster alpha --peer beta --state-dir ./alpha-state < token.txt`,

	"gitpeer token generate": `# on the provider beta: a token for the consumer alpha, printed once
gitpeer token generate --cluster beta --peer alpha --state-dir ./beta-state > token.txt`,

	"gitpeer token set": `# on the consumer alpha: the token beta's admin handed over
gitpeer token set --cluster alpha --peer beta --state-dir ./alpha-state < token.txt`,

	"gitpeer trust": `gitpeer trust --list --state-dir ./alpha-state
gitpeer trust --peer beta --state-dir ./alpha-state   # re-pin the key beta publishes, at the next pass`,

	"gitpeer rotate-key": `gitpeer rotate-key --cluster alpha --state-dir ./alpha-state --repo ./peering
gitpeer rotate-key --cluster alpha --backend kubernetes --repo ./peering`,

	"gitpeer allowed-signers": `# check the clusters' commit signatures with git
gitpeer allowed-signers > ../allowed_signers && git -c gpg.ssh.allowedSignersFile=../allowed_signers log --show-signature -1
gitpeer allowed-signers --format openpgp | gpg --import`,

	"gitpeer version": `gitpeer version
gitpeer version -o json`,
}

// setExamples gives every command under root its commandExamples entry,
// indented as cobra prints Example sections.
func setExamples(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if ex, ok := commandExamples[c.CommandPath()]; ok {
			c.Example = "  " + strings.ReplaceAll(ex, "\n", "\n  ")
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
