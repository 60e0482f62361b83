{{/* The chart name. */}}
{{- define "interlace.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name (object names). */}}
{{- define "interlace.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "interlace.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "interlace.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: interlace
{{- end -}}

{{/* Selector labels of the operator pods. */}}
{{- define "interlace.operatorSelector" -}}
app.kubernetes.io/name: {{ include "interlace.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* Selector labels of the router pods. */}}
{{- define "interlace.routerSelector" -}}
app.kubernetes.io/name: {{ include "interlace.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: router
{{- end -}}

{{/* Selector labels of the NATS pods. */}}
{{- define "interlace.natsSelector" -}}
app.kubernetes.io/name: {{ include "interlace.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: nats
{{- end -}}

{{- define "interlace.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "interlace.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "interlace.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The NATS URL the operator hands to engine and runner pods. */}}
{{- define "interlace.natsUrl" -}}
{{- if .Values.nats.enabled -}}
{{- $scheme := ternary "tls" "nats" .Values.nats.tls.enabled -}}
{{- $urls := list -}}
{{- range $i := until (int .Values.nats.replicas) -}}
{{- $urls = append $urls (printf "%s://%s-nats-%d.%s-nats-headless.%s.svc:4222" $scheme (include "interlace.fullname" $) $i (include "interlace.fullname" $) $.Release.Namespace) -}}
{{- end -}}
{{- join "," $urls -}}
{{- else -}}
{{- required "nats.externalUrl is required when nats.enabled is false" .Values.nats.externalUrl -}}
{{- end -}}
{{- end -}}

{{/* The Secret with the NATS servers' certificate (tls.crt, tls.key, ca.crt). */}}
{{- define "interlace.natsTlsSecret" -}}
{{- default (printf "%s-nats-tls" (include "interlace.fullname" .)) .Values.nats.tls.secretName -}}
{{- end }}

{{/* The trust-root Secret (auth.conf for nats-server; the operator makes it when absent). */}}
{{- define "interlace.natsAuthSecret" -}}
{{- default (printf "%s-nats-auth" (include "interlace.fullname" .)) .Values.nats.auth.secretName -}}
{{- end }}

{{/* The router's credentials Secret, written by the operator (NATS creds, CA, owner-tag key, engine API key). */}}
{{- define "interlace.routerCredentialsSecret" -}}
{{- printf "%s-router-credentials" (include "interlace.fullname" .) -}}
{{- end }}

{{/* The Secret with the clients' API keys (`api-keys`), or empty when client authentication is off. */}}
{{- define "interlace.routerApiKeysSecret" -}}
{{- if .Values.router.apiKeys.secretName -}}
{{- .Values.router.apiKeys.secretName -}}
{{- else if .Values.router.apiKeys.generate -}}
{{- printf "%s-router-api-keys" (include "interlace.fullname" .) -}}
{{- end -}}
{{- end }}

{{/* Whether the operator writes the router's credentials Secret (auth or TLS on). */}}
{{- define "interlace.routerCredentials" -}}
{{- if or (include "interlace.natsAuth" .) (include "interlace.natsTls" .) -}}true{{- end -}}
{{- end }}

{{/* TLS to NATS: on for the chart's NATS, or for an external one whose CA Secret is named. */}}
{{- define "interlace.natsTls" -}}
{{- if and .Values.nats.tls.enabled (or .Values.nats.enabled .Values.nats.tls.secretName) -}}true{{- end -}}
{{- end }}

{{/* NATS authentication: on for the chart's NATS, or for an external one whose trust-root Secret is named. */}}
{{- define "interlace.natsAuth" -}}
{{- if and .Values.nats.auth.enabled (or .Values.nats.enabled .Values.nats.auth.secretName) -}}true{{- end -}}
{{- end }}
