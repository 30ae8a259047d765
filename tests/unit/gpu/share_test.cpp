// A tenant's share of the GPU pool (issue 38): the --gpu-share syntax and the
// books settle() keeps (fair share, borrowed, lent).
#include <catch2/catch.hpp>

#include "vkube/gpu/share.h"

using vkube::Code;
using vkube::gpu::format_gpus;
using vkube::gpu::GpuShare;
using vkube::gpu::parse_gpu_share;
using vkube::gpu::settle;
using vkube::gpu::TenantBooks;

namespace {

GpuShare share(std::string_view text) {
  auto s = parse_gpu_share(text);
  INFO(text);
  REQUIRE(s.is_ok());
  return *s;
}

TenantBooks row(std::string name, std::string_view spec, int64_t allocated, int64_t pending = 0) {
  TenantBooks b;
  b.ns = "vkube-" + name;
  b.tenant = std::move(name);
  b.share = share(spec);
  b.allocated = allocated;
  b.pending = pending;
  return b;
}

}  // namespace

TEST_CASE("--gpu-share: the forms it takes", "[gpu][share]") {
  CHECK(share("") == GpuShare{});
  GpuShare s = share("deserved=8,limit=24,weight=2,model:H100=4");
  CHECK(s.deserved_milli == 8000);
  CHECK(s.limit_milli == 24000);
  CHECK(s.weight == 2);
  CHECK(s.preemptible);
  CHECK(s.model_deserved_milli == std::map<std::string, int64_t>{{"H100", 4000}});
  // Any order; amounts as GPUs, fractions or milli.
  s = share("preemptible=false,limit=2500m,deserved=1.5");
  CHECK(s.deserved_milli == 1500);
  CHECK(s.limit_milli == 2500);
  CHECK_FALSE(s.preemptible);
  CHECK(share("weight=0").weight == 0);
  CHECK(share("weight=1000").weight == 1000);
  CHECK_FALSE(share("deserved=3").limit_milli.has_value());
  CHECK(share("deserved=2,limit=2").limit_milli == 2000);
}

TEST_CASE("--gpu-share: bad items are refused saying which and why", "[gpu][share]") {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"deserved=8,", "invalid GPU share \"deserved=8,\": empty item"},
      {",deserved=8", "empty item"},
      {"deserved", "invalid GPU share item \"deserved\": expected deserved=N, limit=N"},
      {"deserved=-1", "deserved must be a number of GPUs, 0 or more"},
      {"deserved=eight", "got \"eight\""},
      {"deserved=", "deserved must be a number of GPUs"},
      {"limit=x", "invalid GPU share item \"limit=x\": limit must be a number of GPUs"},
      {"weight=1.5", "weight must be a whole number from 0 to 1000, got \"1.5\""},
      {"weight=1001", "weight must be a whole number from 0 to 1000"},
      {"weight=-1", "weight must be a whole number"},
      {"preemptible=yes", "preemptible must be true or false, got \"yes\""},
      {"deserved=1,deserved=2", "deserved is given more than once"},
      {"deserved=4,model:H100=1,model:H100=2", "model:H100 is given more than once"},
      {"model:=1", "the model is missing"},
      {"deserved=4,model:H 100=1", "is not a label value"},
      {"deserved=4,model:H100=x", "the guarantee must be a number of GPUs"},
      {"gpus=4", "unknown setting \"gpus\" (known: deserved, limit, weight, preemptible"},
      {"deserved=8,limit=4",
       "invalid GPU share \"deserved=8,limit=4\": limit 4 is below deserved 8"},
      {"deserved=4,model:H100=3,model:A100=2",
       "the model guarantees add up to 5, more than deserved 4"},
      {"model:H100=1", "more than deserved 0"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    auto s = parse_gpu_share(c.text);
    REQUIRE_FALSE(s.is_ok());
    CHECK(s.status().code() == Code::kInvalid);
    CHECK_THAT(s.status().message(), Catch::Contains(c.message));
  }
}

TEST_CASE("--gpu-share: the canonical form parses back to the same share", "[gpu][share]") {
  CHECK(GpuShare{}.to_string() == "deserved=0");
  CHECK(share("weight=2,deserved=8,model:H100=4,limit=24").to_string() ==
        "deserved=8,limit=24,weight=2,model:H100=4");
  CHECK(share("deserved=1500m,preemptible=false").to_string() == "deserved=1.5,preemptible=false");
  CHECK(share("preemptible=true").to_string() == "deserved=0");
  for (const char* text : {"", "deserved=0.25,limit=0.5", "deserved=8,limit=24,weight=0",
                           "deserved=3,preemptible=false,model:A100=1,model:H100=2"}) {
    INFO(text);
    GpuShare s = share(text);
    CHECK(share(s.to_string()) == s);
  }
}

TEST_CASE("format_gpus prints thousandths as GPUs", "[gpu][share]") {
  CHECK(format_gpus(0) == "0");
  CHECK(format_gpus(8000) == "8");
  CHECK(format_gpus(500) == "0.5");
  CHECK(format_gpus(1250) == "1.25");
  CHECK(format_gpus(1) == "0.001");
  CHECK(format_gpus(-1500) == "-1.5");
}

TEST_CASE("settle: an idle tenant's GPUs are lent to a busy one", "[gpu][share]") {
  // A (deserved 8) idle, B (deserved 8) runs 16 one-GPU pods on 16 GPUs.
  std::vector<TenantBooks> rows = {row("a", "deserved=8", 0), row("b", "deserved=8", 16000)};
  settle(rows, 16000);
  CHECK(rows[0].fair_share == 0);
  CHECK(rows[1].fair_share == 16000);
  CHECK(rows[1].borrowed == 8000);
  CHECK(rows[0].borrowed == 0);
  CHECK(rows[0].lent == 8000);
  CHECK(rows[1].lent == 0);
}

TEST_CASE("settle: a tenant that wants its deserved share gets it back", "[gpu][share]") {
  // A submits 8 while B still holds all 16: each is owed 8, so B's 8
  // borrowed GPUs are to be reclaimed (B above its fair share, A below).
  std::vector<TenantBooks> rows = {row("a", "deserved=8", 0, 8000),
                                   row("b", "deserved=8", 16000, 8000)};
  settle(rows, 16000);
  CHECK(rows[0].fair_share == 8000);
  CHECK(rows[1].fair_share == 8000);
  CHECK(rows[1].allocated > rows[1].fair_share);
  CHECK(rows[0].lent == 8000);
  CHECK(rows[1].borrowed == 8000);
}

TEST_CASE("settle: the idle pool is split by weight, none beyond its demand", "[gpu][share]") {
  std::vector<TenantBooks> rows = {row("a", "deserved=4,weight=2", 0, 16000),
                                   row("b", "deserved=4", 0, 16000)};
  settle(rows, 16000);
  // 8 idle beyond the deserved 4+4, split 2:1 (the odd thousandth to the heavier).
  CHECK(rows[0].fair_share == 4000 + 5334);
  CHECK(rows[1].fair_share == 4000 + 2666);

  // A wants only 1 more: the rest of the surplus goes to B.
  rows = {row("a", "deserved=4,weight=2", 5000), row("b", "deserved=4", 0, 16000)};
  settle(rows, 16000);
  CHECK(rows[0].fair_share == 5000);
  CHECK(rows[1].fair_share == 11000);

  // Weight 0 borrows only what nobody weighted wants.
  rows = {row("a", "deserved=0,weight=0", 0, 16000), row("b", "deserved=0", 0, 10000)};
  settle(rows, 16000);
  CHECK(rows[1].fair_share == 10000);
  CHECK(rows[0].fair_share == 6000);
}

TEST_CASE("settle: a limit caps the fair share, borrowing included", "[gpu][share]") {
  std::vector<TenantBooks> rows = {row("a", "deserved=2", 0),
                                   row("b", "deserved=4,limit=6", 0, 16000)};
  settle(rows, 16000);
  CHECK(rows[1].fair_share == 6000);
  CHECK(rows[0].fair_share == 0);
}

TEST_CASE("settle: a tenant whose pods may not be preempted never borrows", "[gpu][share]") {
  std::vector<TenantBooks> rows = {row("a", "deserved=8", 0),
                                   row("b", "deserved=8,preemptible=false", 2000, 14000)};
  settle(rows, 16000);
  CHECK(rows[1].fair_share == 8000);
  CHECK(rows[0].fair_share == 0);
}

TEST_CASE("settle: oversubscribed guarantees split the pool in proportion", "[gpu][share]") {
  std::vector<TenantBooks> rows = {row("a", "deserved=12", 0, 12000),
                                   row("b", "deserved=4", 0, 4000)};
  settle(rows, 8000);
  CHECK(rows[0].fair_share == 6000);
  CHECK(rows[1].fair_share == 2000);
}

TEST_CASE("settle: lent is what borrowers took out of unused guarantees", "[gpu][share]") {
  // 24 GPUs, 16 deserved: 8 belong to nobody. C (deserved 0) holds 14, 6 of
  // which came out of A's 8 and B's 4 unused deserved GPUs, 2:1.
  std::vector<TenantBooks> rows = {row("a", "deserved=8", 0), row("b", "deserved=8", 4000),
                                   row("c", "", 14000)};
  settle(rows, 24000);
  CHECK(rows[2].borrowed == 14000);
  CHECK(rows[0].lent == 4000);
  CHECK(rows[1].lent == 2000);
  CHECK(rows[2].lent == 0);
  // Borrowing only the undeserved capacity lends nothing.
  rows = {row("a", "deserved=8", 0), row("c", "", 8000)};
  settle(rows, 16000);
  CHECK(rows[1].borrowed == 8000);
  CHECK(rows[0].lent == 0);
}
