// Command descheduler runs upstream's descheduler (sigs.k8s.io/descheduler) with one addition
// for the sandbox: --prometheus-url gives it a plain HTTP Prometheus client. Upstream makes its
// Prometheus client only from an in-cluster service account token (or a Secret it reads), and
// the sandbox's descheduler runs outside any pod. Everything else is upstream's command.
package main

import (
	"context"
	"fmt"
	"os"

	promapi "github.com/prometheus/client_golang/api"
	"github.com/spf13/pflag"
	"k8s.io/component-base/logs"
	"sigs.k8s.io/descheduler/cmd/descheduler/app"
	"sigs.k8s.io/descheduler/cmd/descheduler/app/options"
	"sigs.k8s.io/descheduler/pkg/descheduler"
)

func main() {
	s, err := options.NewDeschedulerServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "descheduler:", err)
		os.Exit(1)
	}
	fs := pflag.NewFlagSet("descheduler", pflag.ExitOnError)
	s.AddFlags(fs)
	url := fs.String("prometheus-url", "", "Prometheus to query without authentication")
	_ = fs.Parse(os.Args[1:])
	logs.InitLogs()
	defer logs.FlushLogs()
	descheduler.SetupPlugins()
	if err := s.Apply(); err != nil {
		fmt.Fprintln(os.Stderr, "descheduler:", err)
		os.Exit(1)
	}
	if *url != "" {
		client, err := promapi.NewClient(promapi.Config{Address: *url})
		if err != nil {
			fmt.Fprintln(os.Stderr, "descheduler: prometheus client:", err)
			os.Exit(1)
		}
		s.PrometheusClient = client
	}
	if err := app.Run(context.Background(), s); err != nil {
		fmt.Fprintln(os.Stderr, "descheduler:", err)
		os.Exit(1)
	}
}
