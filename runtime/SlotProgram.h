// The execution skeleton the compiled backends share (cpu, onednn): every
// value is a slot in a table; steps read and write slots in graph order, and
// each intermediate is freed right after its last use. A backend derives its
// Step from SlotStep (adding what it calls) and its Program from
// SlotProgram<Step> (adding how a step runs).
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/Error.h"
#include "ir/Graph.h"

namespace friction {

struct SlotStep {
  std::vector<int> in, out;  // slots; -1 for absent inputs
  std::vector<int> release;  // slots whose last use is this step
};

template <typename Step>
struct SlotProgram {
  int numSlots = 0;
  std::vector<int> inputSlots, outputSlots;
  std::vector<std::pair<int, Tensor>> constants;
  std::vector<Step> steps;

  // The slot of `v`, numbered on first sight (null: -1).
  int slotOf(const Value* v) {
    if (!v) return -1;
    auto [it, fresh] = slots_.emplace(v, numSlots);
    if (fresh) numSlots++;
    return it->second;
  }

  // Fills every step's release list; call once the steps, constants and outputs are in.
  // Graph outputs, constants and the caller's inputs are never released.
  void computeReleases() {
    std::vector<int> last(size_t(numSlots), -1);
    for (size_t i = 0; i < steps.size(); ++i)
      for (int in : steps[i].in)
        if (in >= 0) last[size_t(in)] = int(i);
    for (int o : outputSlots) last[size_t(o)] = -1;
    for (const auto& c : constants) last[size_t(c.first)] = -1;
    for (int in : inputSlots) last[size_t(in)] = -1;
    for (size_t sl = 0; sl < last.size(); ++sl)
      if (last[sl] >= 0) steps[size_t(last[sl])].release.push_back(int(sl));
    std::vector<bool> constant(size_t(numSlots), false);
    for (const auto& c : constants) constant[size_t(c.first)] = true;
    transientSlots_.clear();
    for (int sl = 0; sl < numSlots; ++sl)
      if (!constant[size_t(sl)]) transientSlots_.push_back(sl);
  }

  // The table at the start of a run: constants and the caller's inputs. Tables are kept between runs
  // (given back by finishRun), the constants in them, so a run neither allocates its table nor copies the
  // constants in: for a small model that was a third of a run (an LSTM tagger's 40 steps under halide).
  std::vector<Tensor> takeSlots(const std::vector<Tensor>& inputs) const {
    FRICTION_CHECK(inputs.size() == inputSlots.size(), "model takes " + std::to_string(inputSlots.size()) +
                                                           " inputs, got " + std::to_string(inputs.size()));
    std::vector<Tensor> env;
    {
      std::lock_guard<std::mutex> lock(spares_->mutex);
      if (!spares_->tables.empty()) {
        env = std::move(spares_->tables.back());
        spares_->tables.pop_back();
      }
    }
    if (env.empty()) {
      env.resize(static_cast<size_t>(numSlots));
      for (const auto& [slot, t] : constants) env[size_t(slot)] = t;
    }
    for (size_t i = 0; i < inputs.size(); ++i) env[size_t(inputSlots[i])] = inputs[i];
    return env;
  }

  // Stores a step's results and frees the slots whose last use it was.
  static void finishStep(const Step& s, std::vector<Tensor>& outs, std::vector<Tensor>& env) {
    for (size_t o = 0; o < s.out.size() && o < outs.size(); ++o) env[size_t(s.out[o])] = std::move(outs[o]);
    for (int slot : s.release) env[size_t(slot)] = Tensor();
  }

  // The graph outputs at the end of a run; `backend` names who failed. The table goes back to the spares
  // with every slot but the constants' emptied (an output nothing reads, the caller's inputs).
  std::vector<Tensor> finishRun(std::vector<Tensor>& env, const std::string& backend) const {
    std::vector<Tensor> r;
    for (int slot : outputSlots) {
      FRICTION_CHECK(env[size_t(slot)].defined(), backend + ": an output was not computed");
      r.push_back(env[size_t(slot)]);
    }
    for (int slot : transientSlots_) env[size_t(slot)] = Tensor();
    std::lock_guard<std::mutex> lock(spares_->mutex);
    spares_->tables.push_back(std::move(env));
    return r;
  }

 private:
  struct Spares {
    std::mutex mutex;
    std::vector<std::vector<Tensor>> tables;  // one per run that was in flight at once
  };
  std::unordered_map<const Value*, int> slots_;
  std::vector<int> transientSlots_;  // every slot but the constants'
  std::shared_ptr<Spares> spares_ = std::make_shared<Spares>();
};

}  // namespace friction
