// A kube-scheduler with the Trimaran load-aware plugins of sigs.k8s.io/scheduler-plugins
// registered, and nothing else added: the benchmarks and the interop test run it against
// Ballast's watcher. Only the Trimaran plugins are linked, which keeps the build small.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	// Decodes the plugins' args (TargetLoadPackingArgs, ...) from the scheduler configuration.
	_ "sigs.k8s.io/scheduler-plugins/apis/config/scheme"
	"sigs.k8s.io/scheduler-plugins/pkg/trimaran/loadvariationriskbalancing"
	"sigs.k8s.io/scheduler-plugins/pkg/trimaran/lowriskovercommitment"
	"sigs.k8s.io/scheduler-plugins/pkg/trimaran/targetloadpacking"
)

func main() {
	command := app.NewSchedulerCommand(
		app.WithPlugin(targetloadpacking.Name, targetloadpacking.New),
		app.WithPlugin(loadvariationriskbalancing.Name, loadvariationriskbalancing.New),
		app.WithPlugin(lowriskovercommitment.Name, lowriskovercommitment.New),
	)
	os.Exit(cli.Run(command))
}
