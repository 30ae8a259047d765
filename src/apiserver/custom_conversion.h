// Versions of custom resources: the None strategy (only apiVersion changes) and the Webhook
// strategy (an apiextensions.k8s.io ConversionReview sent to the CRD's webhook), applied to
// reads, writes, lists and watches whenever an object is not in the version wanted, so objects
// stored before a storage-version change are served and rewritten converted too.
#pragma once

#include <string>
#include <vector>

#include "errors.h"
#include "registry.h"

namespace vkube::apiserver {

class Server;

// Whether objects of `k` are converted by a webhook (its CRD's strategy is Webhook).
bool converts_by_webhook(const Kind& k);

// Brings every object in `objs` (custom resources of `k`, in any version of its CRD) to
// `api_version` ("group/version"): None sets apiVersion; Webhook sends the objects not yet in
// that version in one ConversionReview (kube's webhook converter) and takes back what the
// webhook answered, with metadata other than labels and annotations restored. Objects of
// built-in kinds are left alone. kInternal "conversion webhook for <group/version>, Kind=<Kind>
// failed: ..." worded as kube when the webhook cannot be called or answers wrongly; the
// objects are then unchanged. Blocks for the call; thread-safe.
Status convert_custom(Server& s, const Kind& k, const std::vector<json*>& objs,
                      const std::string& api_version);
Status convert_custom(Server& s, const Kind& k, json& obj, const std::string& api_version);

// A failed conversion as kube answers it: 500 with the converter's message and no reason
// (kubectl prints "Error from server: conversion webhook for ...").
ApiError conversion_error(const Status& s);

}  // namespace vkube::apiserver
