/*!
 * \file ir/dump.cc
 * \brief Writing pass diagnostics to the folder named by `tvm_memplan.dump_dir`.
 */
#include "ir/dump.h"

#include <sys/stat.h>
#include <tvm/ffi/reflection/registry.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "ir/expr.h"
#include "ir/pass.h"

namespace tvm_memplan {
namespace ir {

namespace {

std::atomic<int> next_file{1};

std::string FileName(int index, const std::string& pass, const std::string& stage) {
  char number[16];
  std::snprintf(number, sizeof(number), "%04d", index);
  return std::string(number) + "-" + pass + "-" + stage + ".txt";
}

}  // namespace

PassDump::PassDump(std::string pass_name) : pass_(std::move(pass_name)) {
  ObjectRef pass_context = schema::func::GetCurrentPassContext().cast<ObjectRef>();
  if (std::optional<Any> dir = PassConfigValue(pass_context, kDumpDirOption)) {
    dir_ = std::string(dir->cast<String>());
  }
}

void PassDump::Write(const std::string& stage, const AnyView& value) const {
  if (!enabled()) return;
  if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    TVM_FFI_THROW(ValueError) << kDumpDirOption << ": cannot create " << dir_ << ": "
                              << std::strerror(errno);
  }
  std::optional<String> str = value.try_cast<String>();
  std::string text = str ? std::string(*str) : ToString(value);
  std::string path = dir_ + "/" + FileName(next_file++, pass_, stage);
  std::ofstream out(path);
  out << text << "\n";
  if (!out) {
    TVM_FFI_THROW(ValueError) << kDumpDirOption << ": cannot write " << path;
  }
}

void RegisterDumpOption() {
  RegisterPassConfigOption(kDumpDirOption, "ffi.String", [](Any value) -> Any {
    std::optional<String> dir = value.try_cast<String>();
    if (!dir || dir->empty()) {
      TVM_FFI_THROW(ValueError) << kDumpDirOption << " must be a folder name (a string), got "
                                << ToString(value);
    }
    return Any(*dir);
  });
}

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef().def("tvm_memplan.ir.RegisterDumpOption", RegisterDumpOption);
}

}  // namespace ir
}  // namespace tvm_memplan
