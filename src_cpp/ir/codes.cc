/*!
 * \file ir/codes.cc
 * \brief The registry of code families, and their export.
 */
#include "ir/codes.h"

#include <tvm/ffi/reflection/registry.h>

#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ir/expr.h"

namespace tvm_memplan {
namespace ir {

namespace {

std::map<std::string, std::vector<Code>>& Families() {
  static std::map<std::string, std::vector<Code>> families;
  return families;
}

std::mutex& Lock() {
  static std::mutex lock;
  return lock;
}

}  // namespace

void RegisterCodeFamily(const char* name, const Code* codes, size_t count) {
  std::lock_guard<std::mutex> guard(Lock());
  Families()[name] = std::vector<Code>(codes, codes + count);
}

char* CodeFieldDoc(const char* lead, const Code* codes, size_t count) {
  static std::deque<std::string> docs;  // stable addresses
  std::string doc = std::string(lead) + ":";
  for (size_t i = 0; i < count; ++i) {
    doc += std::string(" \"") + codes[i].value + "\": " + codes[i].sentence;
    if (doc.back() != '.') doc += ';';
  }
  if (doc.back() == ';') doc.back() = '.';
  std::lock_guard<std::mutex> guard(Lock());
  docs.push_back(std::move(doc));
  return docs.back().data();
}

TVM_FFI_STATIC_INIT_BLOCK() {
  tvm::ffi::reflection::GlobalDef()
      .def("tvm_memplan.analysis.code_families",
           []() {
             std::lock_guard<std::mutex> guard(Lock());
             Array<String> names;
             for (const auto& [name, codes] : Families()) names.push_back(name);
             return names;
           })
      .def("tvm_memplan.analysis.codes", [](String family) {
        std::lock_guard<std::mutex> guard(Lock());
        auto found = Families().find(family);
        if (found == Families().end()) {
          std::string known;
          for (const auto& [name, codes] : Families()) known += (known.empty() ? "" : ", ") + name;
          TVM_FFI_THROW(ValueError)
              << "no code family " << Quoted(family) << " (there are " << known << ")";
        }
        Array<Array<String>> rows;
        for (const Code& code : found->second) {
          rows.push_back(Array<String>{code.value, code.sentence, code.remedy});
        }
        return rows;
      });
}

}  // namespace ir
}  // namespace tvm_memplan
