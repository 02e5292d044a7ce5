{{/* The release name, unless it already names the chart's parts: `ballast` gives ballast-watcher. */}}
{{- define "ballast.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ballast.labels" -}}
app.kubernetes.io/part-of: ballast
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Selector labels of one part: (list $ "watcher"). */}}
{{- define "ballast.selector" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "ballast.fullname" $root }}-{{ index . 1 }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
{{- end -}}

{{- define "ballast.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{- define "ballast.watcherUrl" -}}
http://{{ include "ballast.fullname" . }}-watcher.{{ .Release.Namespace }}.svc:{{ .Values.watcher.service.port }}
{{- end -}}

{{- define "ballast.rebalancerUrl" -}}
http://{{ include "ballast.fullname" . }}-rebalancer.{{ .Release.Namespace }}.svc:{{ .Values.rebalancer.port }}
{{- end -}}

{{- define "ballast.redisUrl" -}}
{{- if .Values.redis.enabled -}}
redis://{{ include "ballast.fullname" . }}-redis:6379/0
{{- else -}}
{{- required "redis.url is required when redis.enabled is false (the watcher replicas share their windows through it)" .Values.redis.url -}}
{{- end -}}
{{- end -}}

{{/* True (non-empty) when the chart's own Redis asks for a password. */}}
{{- define "ballast.redisAuth" -}}
{{- if and .Values.redis.enabled .Values.redis.auth.enabled -}}true{{- end -}}
{{- end -}}

{{- define "ballast.redisSecret" -}}
{{- .Values.redis.auth.existingSecret | default (printf "%s-redis" (include "ballast.fullname" .)) -}}
{{- end -}}

{{/* The Redis password as a container's environment variable REDIS_PASSWORD. */}}
{{- define "ballast.redisPasswordEnv" -}}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "ballast.redisSecret" . }}
      key: password
{{- end -}}

{{- define "ballast.priorityClass" -}}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end -}}
{{- end -}}

{{- define "ballast.tokenSecret" -}}
{{- .Values.auth.existingSecret | default (printf "%s-watcher-token" (include "ballast.fullname" .)) -}}
{{- end -}}

{{/* Pod and container hardening shared by every part: Pod Security `restricted`. */}}
{{- define "ballast.podSecurity" -}}
runAsNonRoot: true
runAsUser: {{ .uid }}
runAsGroup: {{ .uid }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "ballast.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* A cluster-scoped object's name: the release's name alone would collide with a release of
     the same name in another namespace. `ballast` in `ballast` keeps its short name. */}}
{{- define "ballast.clusterName" -}}
{{- $root := index . 0 -}}
{{- $base := include "ballast.fullname" $root -}}
{{- if eq $base $root.Release.Namespace -}}
{{- printf "%s-%s" $base (index . 1) -}}
{{- else -}}
{{- printf "%s-%s-%s" $base $root.Release.Namespace (index . 1) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* A generated secret's value: (list $ "secret-name" "key" "given"). The value given, else the
     one the cluster already holds (lookup: nothing under `helm template` or Argo CD, which is
     why every token has an existingSecret), else a random one. Remembered for the whole render,
     so the Secret and the pods' checksum annotations agree. */}}
{{- define "ballast.secretValue" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- $key := index . 2 -}}
{{- $given := index . 3 -}}
{{- if not (hasKey $root.Values "__ballastGenerated") -}}
{{- $_ := set $root.Values "__ballastGenerated" dict -}}
{{- end -}}
{{- $memo := get $root.Values "__ballastGenerated" -}}
{{- $id := printf "%s/%s" $name $key -}}
{{- if not (hasKey $memo $id) -}}
{{- $value := $given -}}
{{- if not $value -}}
{{- $old := lookup "v1" "Secret" $root.Release.Namespace $name -}}
{{- $value = get ($old.data | default dict) $key | b64dec | default (randAlphaNum 40) -}}
{{- end -}}
{{- $_ := set $memo $id $value -}}
{{- end -}}
{{- get $memo $id -}}
{{- end -}}

{{/* What a pod reads from a Secret at start, for its checksum annotation: the value when the
     chart makes the Secret, the Secret's name when it is the operator's (existingSecret; its
     content is not the chart's to see: roll the pods after rotating it). (list $ "existing"
     "secret-name" "key" "given") */}}
{{- define "ballast.secretChecksum" -}}
{{- $root := index . 0 -}}
{{- $existing := index . 1 -}}
{{- if $existing -}}
{{- printf "existing:%s" $existing -}}
{{- else -}}
{{- include "ballast.secretValue" (list $root (index . 2) (index . 3) (index . 4)) -}}
{{- end -}}
{{- end -}}

{{- define "ballast.extenderSecret" -}}
{{- .Values.scheduler.extender.existingSecret | default (printf "%s-scheduler-extender-token" (include "ballast.fullname" .)) -}}
{{- end -}}

{{- define "ballast.leaseName" -}}
{{- .Values.scheduler.config.leaderElection.resourceName | default (printf "%s-scheduler" (include "ballast.fullname" .)) -}}
{{- end -}}

{{/* Where a part's pods go and what they carry: (list $ "watcher" .Values.watcher). The
     default affinity spreads the replicas over nodes; `affinity` replaces it. */}}
{{- define "ballast.placement" -}}
{{- $root := index . 0 -}}
{{- $part := index . 1 -}}
{{- $v := index . 2 -}}
{{- if $v.affinity }}
affinity:
  {{- toYaml $v.affinity | nindent 2 }}
{{- else if ne $part "redis" }}
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector:
            matchLabels:
              {{- include "ballast.selector" (list $root $part) | nindent 14 }}
{{- end }}
{{- with $v.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $v.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* imagePullSecrets for a part: its own list, else the chart's. */}}
{{- define "ballast.pullSecrets" -}}
{{- $root := index . 0 -}}
{{- $v := index . 1 -}}
{{- with ($v.imagePullSecrets | default $root.Values.imagePullSecrets) }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The log settings every Ballast process takes as flags. */}}
{{- define "ballast.logArgs" -}}
- --log-level={{ .Values.logging.level }}
- --log-format={{ .Values.logging.format }}
{{- end -}}

{{/* The scheduler's --provider-lag and --recent-max-age from scheduler.extraArgs (`--FLAG=S`, or
the flag and its value as two items), as the rebalancer's flags: a sample's lag is the metrics
pipeline's, the same for both, and the judge models the scheduler's count of the pods it bound
lately. Before rebalancer.extraArgs, so a value of the rebalancer's own wins. */}}
{{- define "ballast.schedulerSharedArgs" -}}
{{- $args := .Values.scheduler.extraArgs | default list -}}
{{- range $i, $a := $args }}
{{- $a = toString $a }}
{{- range $flag := list "--provider-lag" "--recent-max-age" }}
{{- if hasPrefix (printf "%s=" $flag) $a }}
- {{ $a | quote }}
{{- else if and (eq $a $flag) (lt (add1 $i) (len $args)) }}
- {{ $a | quote }}
- {{ index $args (add1 $i) | toString | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
