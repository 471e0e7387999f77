//===- CommandSupportTest.cpp - eval defaults and report --------*- C++ -*-===//

#include "txl/rt/commands/Commands.h"

#include "TestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace txl::rt {
namespace {

using test::expectError;

/// A model descriptor like ptb_small's: [eval] tgt_len 64, mem_len 64,
/// batch 10, clamp_len -1, dataset ptb.
txl_model_info_t ptbSmallInfo() {
  txl_model_info_t info{};
  info.abi_version = TXL_ABI_VERSION;
  info.model_name = "ptb_small";
  info.n_token = 10000;
  info.n_layer = 3;
  info.d_model = 128;
  info.tgt_len = 64;
  info.mem_len = 64;
  info.clamp_len = -1;
  info.eval_tgt_len = 64;
  info.eval_mem_len = 64;
  info.eval_clamp_len = -1;
  info.eval_batch_size = 10;
  info.eval_same_length = 0;
  info.dataset = "ptb";
  info.data_path = "";
  return info;
}

EvalOptions baseOptions() {
  EvalOptions options;
  options.dataDir = "/data/ptb";
  options.checkpoint = "model.safetensors";
  return options;
}

// Unset options take the model's [eval] values and dataset.
TEST(CommandSupportTest, DefaultsComeFromTheModel) {
  EvalSettings s = resolveEvalSettings(ptbSmallInfo(), baseOptions());
  EXPECT_EQ(s.split, Split::Valid);
  EXPECT_EQ(s.dataset, "ptb");
  EXPECT_EQ(s.dataDir, "/data/ptb");
  EXPECT_EQ(s.checkpoint, "model.safetensors");
  EXPECT_EQ(s.tgtLen, 64);
  EXPECT_EQ(s.memLen, 64);
  EXPECT_EQ(s.clampLen, -1);
  EXPECT_EQ(s.batchSize, 10);
  EXPECT_FALSE(s.sameLength);
}

// Given options win; data_path from the model fills --data.
TEST(CommandSupportTest, OptionsOverride) {
  txl_model_info_t info = ptbSmallInfo();
  info.data_path = "/model/data";
  EvalOptions options = baseOptions();
  options.dataDir.clear();
  options.split = "test";
  options.tgtLen = 32;
  options.memLen = 128;
  options.clampLen = 100;
  options.sameLength = true;
  options.batchSize = 1;
  options.threads = 4;
  EvalSettings s = resolveEvalSettings(info, options);
  EXPECT_EQ(s.split, Split::Test);
  EXPECT_EQ(s.dataDir, "/model/data");
  EXPECT_EQ(s.tgtLen, 32);
  EXPECT_EQ(s.memLen, 128);
  EXPECT_EQ(s.clampLen, 100);
  EXPECT_TRUE(s.sameLength);
  EXPECT_EQ(s.batchSize, 1);
  EXPECT_EQ(s.threads, 4);
}

TEST(CommandSupportTest, ValidationErrors) {
  txl_model_info_t info = ptbSmallInfo();
  auto resolveWith = [&](auto edit) {
    return [&info, edit] {
      EvalOptions options = baseOptions();
      edit(options);
      resolveEvalSettings(info, options);
    };
  };
  expectError(resolveWith([](EvalOptions &o) { o.split = "all"; }),
              TXL_INVALID_ARGUMENT, {"unknown split 'all'"});
  expectError(resolveWith([](EvalOptions &o) { o.tgtLen = 0; }),
              TXL_INVALID_ARGUMENT, {"tgt_len must be positive, got 0"});
  expectError(resolveWith([](EvalOptions &o) { o.batchSize = -2; }),
              TXL_INVALID_ARGUMENT, {"batch size must be positive, got -2"});
  expectError(resolveWith([](EvalOptions &o) { o.memLen = -1; }),
              TXL_INVALID_ARGUMENT, {"mem_len must not be negative"});
  expectError(resolveWith([](EvalOptions &o) {
                o.memLen = 0;
                o.sameLength = true;
              }),
              TXL_INVALID_ARGUMENT, {"same_length requires mem_len > 0"});
  expectError(resolveWith([](EvalOptions &o) { o.threads = -1; }),
              TXL_INVALID_ARGUMENT, {"threads"});
  expectError(resolveWith([](EvalOptions &o) { o.checkpoint.clear(); }),
              TXL_INVALID_ARGUMENT, {"--checkpoint"});
  expectError(resolveWith([](EvalOptions &o) { o.dataDir.clear(); }),
              TXL_INVALID_ARGUMENT, {"no data directory", "--data"});
  expectError(resolveWith([](EvalOptions &o) { o.dataset = "enwik9"; }),
              TXL_INVALID_ARGUMENT, {"unsupported dataset 'enwik9'"});
  info.dataset = "";
  expectError(resolveWith([](EvalOptions &) {}), TXL_INVALID_ARGUMENT,
              {"no dataset", "--dataset"});
  info.dataset = nullptr;
  expectError(resolveWith([](EvalOptions &) {}), TXL_INVALID_ARGUMENT,
              {"no dataset"});
  // same_length from the model with mem_len 0 from the model.
  info = ptbSmallInfo();
  info.eval_same_length = 1;
  info.eval_mem_len = 0;
  expectError(resolveWith([](EvalOptions &) {}), TXL_INVALID_ARGUMENT,
              {"same_length requires mem_len > 0"});
}

// Dropout masks are distinct for 2^34 elements per tensor: exactly 2^34
// passes, one more row does not; the largest hidden state counts d_inner,
// the probabilities n_head; a site with rate 0 draws nothing and is not
// limited.
TEST(CommandSupportTest, DropoutElementLimit) {
  txl_model_info_t info = ptbSmallInfo();
  info.n_head = 8;
  info.d_inner = 1024;
  info.d_embed = 128;
  info.dropout = 0.1;
  info.dropatt = 0.1;
  // Hidden states: qlen * batch * 1024 = 2^34 at qlen = 2^14, batch 2^10
  // (the probabilities, 2^14 * 1 * 2^10 * 8 = 2^27, are within).
  EXPECT_NO_THROW(checkDropoutElements(info, 1 << 14, 1, 1 << 10));
  expectError([&] { checkDropoutElements(info, (1 << 14) + 1, 1, 1 << 10); },
              TXL_INVALID_ARGUMENT,
              {"a hidden state of 17180917760 elements",
               "segment of 16385 positions over up to 1 keys, batch 1024",
               "more than the 2^34 elements whose dropout masks are distinct"});
  // Probabilities: qlen * klen * batch * 8 = 2^34 at 2^12 * 2^13 * 2^6.
  EXPECT_NO_THROW(checkDropoutElements(info, 1 << 12, 1 << 13, 1 << 6));
  expectError(
      [&] { checkDropoutElements(info, 1 << 12, (1 << 13) + 1, 1 << 6); },
      TXL_INVALID_ARGUMENT,
      {"the attention probabilities of 17181966336 elements"});
  // Past 2^64 elements the count does not wrap (2^70 hidden elements).
  expectError([&] { checkDropoutElements(info, 1 << 30, 1 << 30, 1 << 30); },
              TXL_INVALID_ARGUMENT,
              {"a hidden state of 1180591620717411303424 elements"});
  info.dropatt = 0.0;
  EXPECT_NO_THROW(checkDropoutElements(info, 1 << 12, (1 << 13) + 1, 1 << 6));
  info.dropout = 0.0;
  EXPECT_NO_THROW(checkDropoutElements(info, (1 << 14) + 1, 1, 1 << 10));
}

// The official eval.py line: '| {0} loss {1:5.2f} | {0} ppl {2:9.3f}', and
// bpc = loss / ln 2 with {2:9.5f} for character datasets.
TEST(CommandSupportTest, OfficialResultLine) {
  EXPECT_EQ(formatEvalLine("valid", 4.5734261378272105, false),
            "| valid loss  4.57 | valid ppl    96.875");
  EXPECT_EQ(formatEvalLine("test", 4.515082740806833, false),
            "| test loss  4.52 | test ppl    91.385");
  EXPECT_EQ(formatEvalLine("test", 0.8, true),
            "| test loss  0.80 | test bpc   1.15416");
  EXPECT_EQ(formatEvalLine("valid", 12.0, false),
            "| valid loss 12.00 | valid ppl 162754.791");
}

// The stats line and the JSON line carry full-precision values.
TEST(CommandSupportTest, StatsAndJson) {
  EvalResult result;
  result.settings = resolveEvalSettings(ptbSmallInfo(), baseOptions());
  result.loss = 4.5734261378272105;
  result.tokens = 73760;
  result.seconds = 8.0;
  EXPECT_EQ(formatEvalStats(result),
            "| valid tokens 73760 | time 8.00s | 9220.0 tokens/s");
  std::string line = formatEvalJson(result);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  nlohmann::json json = nlohmann::json::parse(line);
  EXPECT_EQ(json["split"], "valid");
  EXPECT_EQ(json["dataset"], "ptb");
  EXPECT_EQ(json["loss"].get<double>(), 4.5734261378272105);
  EXPECT_EQ(json["ppl"].get<double>(), std::exp(4.5734261378272105));
  EXPECT_EQ(json["bpc"].get<double>(), 4.5734261378272105 / std::log(2.0));
  EXPECT_EQ(json["tokens"], 73760);
  EXPECT_EQ(json["seconds"].get<double>(), 8.0);
  EXPECT_EQ(json["tokens_per_s"].get<double>(), 9220.0);
  EXPECT_EQ(json["tgt_len"], 64);
  EXPECT_EQ(json["mem_len"], 64);
  EXPECT_EQ(json["clamp_len"], -1);
  EXPECT_EQ(json["same_length"], false);
  EXPECT_EQ(json["batch_size"], 10);
}

} // namespace
} // namespace txl::rt
