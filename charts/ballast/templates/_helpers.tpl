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
