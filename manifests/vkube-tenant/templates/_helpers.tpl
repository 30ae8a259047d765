{{/*
The tenant's name: .Values.tenant, else the release name. It names the
tenant (--name) and labels everything the tenant creates on the host, so it
must be a DNS-1123 label. Every template includes it, so that a bad value
stops the whole render; the other values are checked here too.
*/}}
{{- define "vkube.tenant" -}}
{{- $tenant := .Values.tenant | default .Release.Name -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $tenant) -}}
{{- fail (printf "tenant %q (default: the release name) must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit" $tenant) -}}
{{- end -}}
{{- if gt (len $tenant) 63 -}}
{{- fail (printf "tenant %q (default: the release name) must be a DNS-1123 label of at most 63 characters, it has %d" $tenant (len $tenant)) -}}
{{- end -}}
{{- include "vkube.validate" . -}}
{{- $tenant -}}
{{- end -}}

{{/* Fails the render on values `vkube serve` would refuse. */}}
{{- define "vkube.validate" -}}
{{- if not (has .Values.podSecurity (list "privileged" "baseline" "restricted")) -}}
{{- fail (printf "podSecurity must be privileged, baseline or restricted, got %q" (toString .Values.podSecurity)) -}}
{{- end -}}
{{- if not (has .Values.gpu.sharing (list "milli" "time-slicing" "hami" "kai")) -}}
{{- fail (printf "gpu.sharing must be milli, time-slicing, hami or kai, got %q" (toString .Values.gpu.sharing)) -}}
{{- end -}}
{{- if not (has .Values.gpu.mig (list "as-is" "smallest-fit")) -}}
{{- fail (printf "gpu.mig must be as-is or smallest-fit, got %q" (toString .Values.gpu.mig)) -}}
{{- end -}}
{{- if lt (int64 .Values.gpu.memoryMiB) 1 -}}
{{- fail (printf "gpu.memoryMiB must be a positive number of MiB, got %v" .Values.gpu.memoryMiB) -}}
{{- end -}}
{{- if and .Values.quota.enabled (ne .Values.service.type "ClusterIP") -}}
{{- $hard := .Values.quota.hard | default dict -}}
{{- if eq (toString (index $hard "services.nodeports" | default "")) "0" -}}
{{- fail (printf "service.type %s needs a node port, but quota.hard[\"services.nodeports\"] is \"0\": raise it (or set quota.enabled=false)" .Values.service.type) -}}
{{- end -}}
{{- if and (eq .Values.service.type "LoadBalancer") (eq (toString (index $hard "services.loadbalancers" | default "")) "0") -}}
{{- fail "service.type LoadBalancer, but quota.hard[\"services.loadbalancers\"] is \"0\": raise it (or set quota.enabled=false)" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* chart label value: name-version */}}
{{- define "vkube.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object of the chart. */}}
{{- define "vkube.labels" -}}
helm.sh/chart: {{ include "vkube.chart" . }}
app.kubernetes.io/name: vkube
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
vkube.io/tenant: {{ include "vkube.tenant" . }}
{{- end -}}

{{/* The control plane's pod: the StatefulSet's and Service's selector. */}}
{{- define "vkube.selectorLabels" -}}
app.kubernetes.io/name: vkube
vkube.io/tenant: {{ include "vkube.tenant" . }}
vkube.io/component: control-plane
{{- end -}}

{{/* The image: repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "vkube.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) -}}
{{- end -}}
