// koord-scheduler (github.com/koordinator-sh/koordinator) with the plugins the sandbox's profile
// enables: LoadAwareScheduling, plus what its framework extension cannot run without (Reservation
// panics the first cycle when missing, DefaultPreBind is appended to every profile) and
// SchedulingHint, which Koordinator's own command registers too. Linking only these keeps the
// build shorter than Koordinator's command with every plugin.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"

	"github.com/koordinator-sh/koordinator/cmd/koord-scheduler/app"
	// Decodes LoadAwareSchedulingArgs and the other plugins' args from the configuration.
	_ "github.com/koordinator-sh/koordinator/pkg/scheduler/apis/config/scheme"
	"github.com/koordinator-sh/koordinator/pkg/scheduler/plugins/defaultprebind"
	"github.com/koordinator-sh/koordinator/pkg/scheduler/plugins/loadaware"
	"github.com/koordinator-sh/koordinator/pkg/scheduler/plugins/reservation"
	"github.com/koordinator-sh/koordinator/pkg/scheduler/plugins/schedulinghint"
)

func main() {
	command := app.NewSchedulerCommand(
		app.WithPlugin(loadaware.Name, loadaware.New),
		app.WithPlugin(reservation.Name, reservation.New),
		app.WithPlugin(defaultprebind.Name, defaultprebind.New),
		app.WithPlugin(schedulinghint.Name, schedulinghint.New),
	)
	os.Exit(cli.Run(command))
}
