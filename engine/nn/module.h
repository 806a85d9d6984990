// Module: a named tree of parameters, buffers and child modules, like torch.nn.Module.
// Registration order defines parameters() order, which DDP's bucketing depends on:
// a module's own parameters first, then each child's, depth-first.
//
//   class Net : public Module {
//    public:
//     Net() { fc_ = register_module("fc", std::make_shared<Linear>(4, 2)); }
//     Tensor forward(const Tensor& x) override { return fc_->forward(x); }
//     std::string type_name() const override { return "Net"; }
//    private:
//     std::shared_ptr<Linear> fc_;
//   };
//
// Not thread-safe: build and train a module from one thread.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../tensor/tensor.h"
#include "state_dict.h"

namespace ddpscope::nn {

class Module {
 public:
  virtual ~Module() = default;
  virtual std::string type_name() const = 0;
  // Modules here map one tensor to one tensor (indices for embeddings and the LM).
  virtual Tensor forward(const Tensor& input);

  std::vector<std::pair<std::string, Tensor>> named_parameters() const;
  std::vector<Tensor> parameters() const;
  std::vector<std::pair<std::string, Tensor>> named_buffers() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }
  int64_t num_parameters() const;

  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  void zero_grad(bool set_to_none = true);
  // Moves every parameter and buffer to `device` in place, as PyTorch's module.to(): the
  // tensors keep their identity (optimizers and DDP built later see the moved data), so
  // call it before building either. A parameter with a gradient keeps no gradient.
  void to(Device device);

  // Puts `child` where the child named `name` was (PyTorch's setattr on a submodule), for
  // conversions such as convert_sync_batchnorm: build optimizers and DDP after it. A
  // module that keeps that child in a member of its own must say so in
  // replace_child_member(); the default refuses, naming the module and the child.
  void replace_child(const std::string& name, std::shared_ptr<Module> child);

  // Parameters and buffers by full name. Loading copies into the existing tensors, so
  // optimizers holding them stay valid; strict loading reports missing, unexpected and
  // mis-shaped entries by name.
  StateDict state_dict() const;
  void load_state_dict(const StateDict& state, bool strict = true);
  void save(const std::string& path) const { save_state_dict(state_dict(), path); }
  void load(const std::string& path, bool strict = true) { load_state_dict(load_state_dict_file(path), strict); }

 protected:
  Tensor register_parameter(const std::string& name, Tensor value);
  Tensor register_buffer(const std::string& name, Tensor value);
  // Called by replace_child() before the child changes: point the member at `child`.
  virtual void replace_child_member(const std::string& name, const std::shared_ptr<Module>& child);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> child) {
    attach_child(name, child);
    return child;
  }

 private:
  void attach_child(const std::string& name, std::shared_ptr<Module> child);
  // "blocks.0.attn." for a module registered under that path; "" for a root.
  std::string path_prefix() const;
  void rename_subtree();

  const Module* parent_ = nullptr;  // the parent owns this module, so a raw pointer
  std::string name_in_parent_;

  std::vector<std::pair<std::string, Tensor>> parameters_;
  std::vector<std::pair<std::string, Tensor>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

}  // namespace ddpscope::nn
