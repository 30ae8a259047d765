{{/*
gpu.hostQueues kai or kueue: the tenant's GPU share (gpu.share) as the host
scheduler's queue objects, the same ones `vkube create --host-gpu-sharing`
writes (src/gpu/host_queues.cpp; the table is in docs/gpu-queues.md).
*/}}

{{/* gpu.share as JSON: deserved, limit (hasLimit), weight, preemptible, models (GPUs each). */}}
{{- define "vkube.gpuShare" -}}
{{- $s := dict "deserved" 0.0 "hasLimit" false "limit" 0.0 "weight" 1 "preemptible" true "models" (dict) -}}
{{- range $item := splitList "," (.Values.gpu.share | default "") -}}
{{- if $item -}}
{{- $kv := splitn "=" 2 $item -}}
{{- $k := $kv._0 -}}
{{- $v := $kv._1 | default "" -}}
{{- if eq $k "weight" -}}
{{- $_ := set $s "weight" (int64 $v) -}}
{{- else if eq $k "preemptible" -}}
{{- $_ := set $s "preemptible" (eq $v "true") -}}
{{- else -}}
{{- $n := 0.0 -}}
{{- if hasSuffix "m" $v -}}
{{- $n = divf (float64 (trimSuffix "m" $v)) 1000 -}}
{{- else -}}
{{- $n = float64 $v -}}
{{- end -}}
{{- if eq $k "deserved" -}}
{{- $_ := set $s "deserved" $n -}}
{{- else if eq $k "limit" -}}
{{- $_ := set $s "limit" $n -}}
{{- $_ := set $s "hasLimit" true -}}
{{- else if hasPrefix "model:" $k -}}
{{- $_ := set $s.models (trimPrefix "model:" $k) $n -}}
{{- else -}}
{{- fail (printf "gpu.share: unknown setting %q (known: deserved, limit, weight, preemptible, model:<product>)" $k) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $s -}}
{{- end -}}

{{/* --host-gpu-sharing of `vkube serve`: KAI's queues need KAI's fractions. */}}
{{- define "vkube.gpuSharing" -}}
{{- if eq .Values.gpu.hostQueues "kai" -}}
{{- if not (has .Values.gpu.sharing (list "milli" "kai")) -}}
{{- fail (printf "gpu.hostQueues kai translates GPU fractions as gpu.sharing kai, not %s" .Values.gpu.sharing) -}}
{{- end -}}
kai
{{- else -}}
{{- .Values.gpu.sharing -}}
{{- end -}}
{{- end -}}

{{/* --host-scheduler-name: hostPolicy.schedulerName, else KAI's with gpu.hostQueues kai. */}}
{{- define "vkube.schedulerName" -}}
{{- if .Values.hostPolicy.schedulerName -}}
{{- .Values.hostPolicy.schedulerName -}}
{{- else if eq .Values.gpu.hostQueues "kai" -}}
kai-scheduler
{{- end -}}
{{- end -}}

{{/* --host-pod-labels as JSON: hostPolicy.podLabels and the queue's label. */}}
{{- define "vkube.podLabels" -}}
{{- $labels := deepCopy (.Values.hostPolicy.podLabels | default dict) -}}
{{- if eq .Values.gpu.hostQueues "kai" -}}
{{- $_ := set $labels "kai.scheduler/queue" (printf "vkube-%s" (include "vkube.tenant" .)) -}}
{{- if not (include "vkube.gpuShare" . | fromJson).preemptible -}}
{{- $_ := set $labels "kai.scheduler/preemptibility" "non-preemptible" -}}
{{- end -}}
{{- else if eq .Values.gpu.hostQueues "kueue" -}}
{{- $_ := set $labels "kueue.x-k8s.io/queue-name" "vkube" -}}
{{- end -}}
{{- toJson $labels -}}
{{- end -}}

{{/* Labels of the pool's objects, shared by every tenant (no vkube.io/tenant). */}}
{{- define "vkube.poolLabels" -}}
helm.sh/chart: {{ include "vkube.chart" . }}
app.kubernetes.io/name: vkube
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* KAI's resources: gpu as given, cpu and memory -1 (unlimited quota, no limit). */}}
{{- define "vkube.kaiResources" -}}
gpu:
  quota: {{ .quota }}
  limit: {{ .limit }}
  overQuotaWeight: {{ .weight }}
cpu:
  quota: -1
  limit: -1
  overQuotaWeight: {{ .weight }}
memory:
  quota: -1
  limit: -1
  overQuotaWeight: {{ .weight }}
{{- end -}}
