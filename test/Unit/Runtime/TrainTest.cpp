//===- TrainTest.cpp - Philox, initialisation, train.py log lines -*- C++ -*-===//

#include "txl/rt/commands/Train.h"
#include "txl/rt/session/ParamInit.h"
#include "txl/rt/support/Philox.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace txl::rt {
namespace {

using test::expectError;

// Known-answer vectors of Random123's kat_vectors for philox4x32_10.
TEST(PhiloxTest, KnownAnswers) {
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                       {0xffffffff, 0xffffffff}),
            (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                       {0xa4093822, 0x299f31d0}),
            (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(ParamInitTest, RulesFollowWeightsInit) {
  EXPECT_EQ(initRuleFor("word_emb.emb_layers.0.weight"), InitRule::Weight);
  EXPECT_EQ(initRuleFor("word_emb.emb_projs.1"), InitRule::Projection);
  EXPECT_EQ(initRuleFor("crit.out_projs.0"), InitRule::Projection);
  EXPECT_EQ(initRuleFor("layers.2.dec_attn.qkv_net.weight"), InitRule::Weight);
  EXPECT_EQ(initRuleFor("layers.2.dec_attn.layer_norm.weight"),
            InitRule::NormWeight);
  EXPECT_EQ(initRuleFor("layers.2.pos_ff.layer_norm.bias"), InitRule::Zero);
  EXPECT_EQ(initRuleFor("layers.0.pos_ff.CoreNet.0.bias"), InitRule::Zero);
  EXPECT_EQ(initRuleFor("layers.0.dec_attn.r_w_bias"), InitRule::Weight);
  EXPECT_EQ(initRuleFor("r_r_bias"), InitRule::Weight);
  EXPECT_EQ(initRuleFor("crit.cluster_weight"), InitRule::Weight);
  EXPECT_EQ(initRuleFor("crit.cluster_bias"), InitRule::Zero);
  EXPECT_EQ(initRuleFor("crit.out_layers.1.bias"), InitRule::Zero);
  EXPECT_EQ(initRuleFor("pos_emb.inv_freq"), InitRule::InvFreq);
  // attn_type 1 and 3's tables: init_weight(r_emb), init_bias(r_bias).
  EXPECT_EQ(initRuleFor("r_emb"), InitRule::Weight);
  EXPECT_EQ(initRuleFor("r_bias"), InitRule::Zero);
  EXPECT_EQ(initRuleFor("r_w_bias"), InitRule::Weight);
  expectError([] { initRuleFor("mystery"); }, TXL_INVALID_ARGUMENT,
              {"no initialisation rule for parameter 'mystery'"});
}

struct Moments {
  double mean = 0, stddev = 0, maxAbs = 0;
};
Moments momentsOf(const std::vector<float> &values) {
  Moments m;
  for (float v : values)
    m.mean += v;
  m.mean /= double(values.size());
  for (float v : values) {
    m.stddev += (v - m.mean) * (v - m.mean);
    m.maxAbs = std::max(m.maxAbs, double(std::fabs(v)));
  }
  m.stddev = std::sqrt(m.stddev / double(values.size()));
  return m;
}

TEST(ParamInitTest, DistributionsAndReproducibility) {
  const char *const noAliases[] = {nullptr};
  txl_param_info_t params[] = {
      {"layers.0.pos_ff.CoreNet.0.weight", 2, {400, 250}, 1, noAliases, 0},
      {"layers.0.pos_ff.layer_norm.weight", 1, {100001}, 1, noAliases, 0},
      {"crit.out_projs.0", 2, {300, 300}, 1, noAliases, 0},
      {"layers.0.pos_ff.CoreNet.0.bias", 1, {7}, 1, noAliases, 0},
      {"pos_emb.inv_freq", 1, {4}, 0, noAliases, 0}};
  txl_model_info_t info{};
  info.init = "normal";
  info.init_std = 0.02;
  info.init_range = 0.1;
  info.proj_init_std = 0.01;
  info.n_params = 5;
  info.params = params;
  auto init = [&](int32_t index, uint64_t seed, int64_t count) {
    std::vector<float> values(count);
    initParameter(info, index, seed, values.data());
    return values;
  };
  Moments w = momentsOf(init(0, 1111, 100000));
  EXPECT_NEAR(w.mean, 0.0, 3e-4);
  EXPECT_NEAR(w.stddev, 0.02, 3e-4);
  Moments ln = momentsOf(init(1, 1111, 100001)); // odd count: last is a cos
  EXPECT_NEAR(ln.mean, 1.0, 3e-4);
  EXPECT_NEAR(ln.stddev, 0.02, 3e-4);
  Moments proj = momentsOf(init(2, 1111, 90000));
  EXPECT_NEAR(proj.stddev, 0.01, 2e-4);
  EXPECT_EQ(init(3, 1111, 7), std::vector<float>(7, 0.0f));
  std::vector<float> invFreq = init(4, 1111, 4);
  EXPECT_FLOAT_EQ(invFreq[0], 1.0f);
  EXPECT_FLOAT_EQ(invFreq[1], 0.1f);   // 10000^(-2/8)
  EXPECT_FLOAT_EQ(invFreq[3], 0.001f); // 10000^(-6/8)
  // A pure function of (seed, parameter): same seed, same values; another
  // seed or another parameter index, others.
  EXPECT_EQ(init(0, 1111, 100000), init(0, 1111, 100000));
  EXPECT_NE(init(0, 1111, 100000), init(0, 1112, 100000));
  info.init = "uniform";
  Moments u = momentsOf(init(0, 7, 100000));
  EXPECT_NEAR(u.mean, 0.0, 2e-3);
  EXPECT_NEAR(u.stddev, 0.1 / std::sqrt(3.0), 1e-3);
  EXPECT_LE(u.maxAbs, 0.1);
  info.init = "xavier";
  expectError([&] { init(0, 7, 100000); }, TXL_INVALID_ARGUMENT,
              {"[train] init 'xavier' is not normal or uniform"});
}

// Lines of ../shared/reference/ptb_small/train_log.txt (official train.py).
TEST(TrainLogTest, MatchesOfficialFormat) {
  EXPECT_EQ(formatTrainLine(1, 200, 200, 0.000998, 481.02, std::log(655.201), false),
            "| epoch   1 step      200 |    200 batches | lr 0.000998 | "
            "ms/batch 481.02 | loss  6.48 | ppl   655.201");
  EXPECT_EQ(formatTrainLine(8, 6400, 44, 9.55e-05, 443.48, 4.3384, false),
            "| epoch   8 step     6400 |     44 batches | lr 9.55e-05 | "
            "ms/batch 443.48 | loss  4.34 | ppl    76.585");
  EXPECT_EQ(formatTrainLine(9, 8000, 736, 0.0, 475.77, 4.24, false),
            "| epoch   9 step     8000 |    736 batches | lr 0 | ms/batch "
            "475.77 | loss  4.24 | ppl    69.408");
  EXPECT_EQ(formatTrainLine(1, 100, 100, 0.00025, 10.0, 1.0, true),
            "| epoch   1 step      100 |    100 batches | lr 0.00025 | "
            "ms/batch 10.00 | loss  1.00 | bpc   1.44270");
  EXPECT_EQ(formatValidLine(1, 1000, 467.49, 5.1477, false),
            "| Eval   1 at step     1000 | time: 467.49s | valid loss  5.15 "
            "| valid ppl   172.035");
}

} // namespace
} // namespace txl::rt
