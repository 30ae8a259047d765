// A tenant's share of the GPU pool: the flag, and the books (share.h).
#include "vkube/gpu/share.h"

#include <algorithm>
#include <numeric>

#include "amounts.h"
#include "vkube/api/validation.h"

namespace vkube::gpu {

namespace {

constexpr int64_t kMaxWeight = 1000;

// Products of two amounts (a weight may itself be an amount) overflow 64 bits.
__extension__ typedef __int128 Wide;

Status bad_item(std::string_view item, const std::string& why) {
  return Status::invalid("invalid GPU share item \"" + std::string(item) + "\": " + why);
}

Status bad_share(std::string_view text, const std::string& why) {
  return Status::invalid("invalid GPU share \"" + std::string(text) + "\": " + why);
}

Status bad_amount(std::string_view item, std::string_view key, std::string_view value) {
  return bad_item(item, std::string(key) +
                            " must be a number of GPUs, 0 or more (\"8\", \"1.5\", \"1500m\"), "
                            "got \"" +
                            std::string(value) + "\"");
}

// Parses one `key=value` item into `s`; `seen` holds the keys given so far.
Status parse_item(std::string_view item, GpuShare& s, std::vector<std::string>& seen) {
  size_t eq = item.find('=');
  if (eq == std::string_view::npos)
    return bad_item(item,
                    "expected deserved=N, limit=N, weight=W, preemptible=true|false or "
                    "model:<product>=N");
  std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
  if (std::find(seen.begin(), seen.end(), key) != seen.end())
    return bad_item(item, std::string(key) + " is given more than once");
  seen.emplace_back(key);
  if (key == "deserved" || key == "limit") {
    auto milli = gpu_amount_milli(value);
    if (!milli) return bad_amount(item, key, value);
    if (key == "deserved")
      s.deserved_milli = *milli;
    else
      s.limit_milli = *milli;
  } else if (key == "weight") {
    auto w = whole_number(value);
    if (!w || *w > kMaxWeight)
      return bad_item(
          item, "weight must be a whole number from 0 to 1000, got \"" + std::string(value) + "\"");
    s.weight = *w;
  } else if (key == "preemptible") {
    if (value != "true" && value != "false")
      return bad_item(item,
                      "preemptible must be true or false, got \"" + std::string(value) + "\"");
    s.preemptible = value == "true";
  } else if (key.starts_with("model:")) {
    std::string model(key.substr(6));
    if (model.empty())
      return bad_item(item, "the model is missing (model:<part of nvidia.com/gpu.product>=N)");
    if (auto errs = api::validate_label_value(model); !errs.empty())
      return bad_item(item, "model \"" + model + "\" is not a label value: " + errs.front());
    auto milli = gpu_amount_milli(value);
    if (!milli) return bad_amount(item, "the guarantee", value);
    s.model_deserved_milli[model] = *milli;
  } else {
    return bad_item(item, "unknown setting \"" + std::string(key) +
                              "\" (known: deserved, limit, weight, preemptible, "
                              "model:<part of nvidia.com/gpu.product>)");
  }
  return Status::ok();
}

// Splits `amount` among rows in proportion to `weight`, none beyond its
// `cap`; rows with weight or cap 0 get nothing. What the proportions leave
// over after rounding down goes one thousandth at a time to the heaviest
// rows first (then the earliest), so the split is whole and deterministic.
// Returns what each got; the sum is min(amount, sum of caps of the rows
// with weight).
std::vector<int64_t> water_fill(const std::vector<int64_t>& cap, const std::vector<int64_t>& weight,
                                int64_t amount) {
  const size_t n = cap.size();
  std::vector<int64_t> got(n, 0);
  std::vector<size_t> active;
  for (size_t i = 0; i < n; ++i)
    if (cap[i] > 0 && weight[i] > 0) active.push_back(i);
  std::stable_sort(active.begin(), active.end(),
                   [&](size_t a, size_t b) { return weight[a] > weight[b]; });
  while (amount > 0 && !active.empty()) {
    Wide total = 0;
    for (size_t i : active) total += weight[i];
    const int64_t round = amount;
    bool progress = false;
    for (size_t i : active) {
      int64_t give = static_cast<int64_t>(Wide{round} * weight[i] / total);
      give = std::min({give, cap[i] - got[i], amount});
      got[i] += give;
      amount -= give;
      progress = progress || give > 0;
    }
    if (!progress) {
      for (size_t i : active) {
        if (amount == 0) break;
        ++got[i];
        --amount;
      }
    }
    std::erase_if(active, [&](size_t i) { return got[i] >= cap[i]; });
  }
  return got;
}

}  // namespace

std::string format_gpus(int64_t milli) {
  std::string sign = milli < 0 ? "-" : "";
  uint64_t m = milli < 0 ? 0 - static_cast<uint64_t>(milli) : static_cast<uint64_t>(milli);
  std::string out = sign + std::to_string(m / 1000);
  if (uint64_t frac = m % 1000; frac != 0) {
    std::string digits = std::to_string(frac);
    digits.insert(0, 3 - digits.size(), '0');
    while (digits.back() == '0') digits.pop_back();
    out += "." + digits;
  }
  return out;
}

std::string GpuShare::to_string() const {
  std::string out = "deserved=" + format_gpus(deserved_milli);
  if (limit_milli) out += ",limit=" + format_gpus(*limit_milli);
  if (weight != 1) out += ",weight=" + std::to_string(weight);
  if (!preemptible) out += ",preemptible=false";
  for (const auto& [model, milli] : model_deserved_milli)
    out += ",model:" + model + "=" + format_gpus(milli);
  return out;
}

Result<GpuShare> parse_gpu_share(std::string_view text) {
  GpuShare s;
  if (text.empty()) return s;
  std::vector<std::string> seen;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = std::min(text.find(',', at), text.size());
    std::string_view item = text.substr(at, comma - at);
    at = comma + 1;
    if (item.empty()) return bad_share(text, "empty item (items are separated by single commas)");
    VKUBE_RETURN_IF_ERROR(parse_item(item, s, seen));
  }
  if (s.limit_milli && *s.limit_milli < s.deserved_milli)
    return bad_share(text, "limit " + format_gpus(*s.limit_milli) + " is below deserved " +
                               format_gpus(s.deserved_milli));
  int64_t models = 0;
  for (const auto& [model, milli] : s.model_deserved_milli) models += milli;
  if (models > s.deserved_milli)
    return bad_share(text, "the model guarantees add up to " + format_gpus(models) +
                               ", more than deserved " + format_gpus(s.deserved_milli));
  return s;
}

void settle(std::vector<TenantBooks>& rows, int64_t capacity) {
  capacity = std::max<int64_t>(0, capacity);
  const size_t n = rows.size();
  std::vector<int64_t> demand(n), base(n);
  int64_t deserved_total = 0, borrowed_total = 0;
  for (size_t i = 0; i < n; ++i) {
    const TenantBooks& r = rows[i];
    demand[i] = std::max<int64_t>(0, r.allocated + r.pending);
    if (r.share.limit_milli) demand[i] = std::min(demand[i], *r.share.limit_milli);
    base[i] = std::min(r.share.deserved_milli, demand[i]);
    deserved_total += r.share.deserved_milli;
  }
  // Deserved shares first; when they ask for more than the pool holds
  // (deserved oversubscribed), the pool is split in proportion to them.
  const int64_t base_total = std::accumulate(base.begin(), base.end(), int64_t{0});
  std::vector<int64_t> fair = base_total <= capacity ? base : water_fill(base, base, capacity);
  int64_t left = capacity - std::accumulate(fair.begin(), fair.end(), int64_t{0});
  // Then what is left, by weight, to those who may borrow; tenants of
  // weight 0 borrow only what no weighted tenant wants.
  std::vector<int64_t> more(n), weight(n), equal(n);
  for (size_t i = 0; i < n; ++i) {
    more[i] = rows[i].share.preemptible ? demand[i] - fair[i] : 0;
    weight[i] = rows[i].share.weight;
    equal[i] = weight[i] == 0 ? 1 : 0;
  }
  for (const auto* w : {&weight, &equal}) {
    std::vector<int64_t> got = water_fill(more, *w, left);
    for (size_t i = 0; i < n; ++i) {
      fair[i] += got[i];
      more[i] -= got[i];
      left -= got[i];
    }
  }
  // Lent: what is borrowed beyond the capacity nobody deserves came out of
  // someone's unused guarantee.
  std::vector<int64_t> unused(n);
  for (size_t i = 0; i < n; ++i) {
    TenantBooks& r = rows[i];
    r.fair_share = fair[i];
    r.borrowed = std::max<int64_t>(0, r.allocated - r.share.deserved_milli);
    borrowed_total += r.borrowed;
    unused[i] = std::max<int64_t>(0, r.share.deserved_milli - r.allocated);
  }
  const int64_t lent_total =
      std::max<int64_t>(0, borrowed_total - std::max<int64_t>(0, capacity - deserved_total));
  std::vector<int64_t> lent = water_fill(unused, unused, lent_total);
  for (size_t i = 0; i < n; ++i) rows[i].lent = lent[i];
}

}  // namespace vkube::gpu
