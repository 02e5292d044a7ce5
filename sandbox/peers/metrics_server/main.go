// metrics-server as released (sigs.k8s.io/metrics-server, pinned in ../versions.py), built from
// its Go module like the sandbox's other peers; nothing is added or changed.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/logs"

	"sigs.k8s.io/metrics-server/cmd/metrics-server/app"
)

func main() {
	logs.InitLogs()
	defer logs.FlushLogs()
	command := app.NewMetricsServerCommand(genericapiserver.SetupSignalHandler())
	if err := command.Execute(); err != nil {
		logs.FlushLogs()
		os.Exit(1)
	}
}
