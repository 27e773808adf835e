/*!
 * \file ir/dump.h
 * \brief The diagnostic channel: with the PassContext option `tvm_memplan.dump_dir` set to a
 *        folder, each tvm-memplan pass writes what it received, the decisions it took and the
 *        modules it made there, one numbered file each.
 *
 * \code
 *   with tvm.transform.PassContext(config={"tvm_memplan.dump_dir": "/tmp/memplan"}):
 *       tvm_memplan.compile(mod, "llvm")
 *   # /tmp/memplan/0001-LowerTVMBuiltin-input.txt, 0002-LowerTVMBuiltin-plan.txt,
 *   # 0003-LowerTVMBuiltin-prepared.txt, 0004-LowerTVMBuiltin-lowered.txt, ...
 *
 *   PassDump dump("LowerTVMBuiltin");          // in a pass
 *   dump.Write("prepared", prepared_module);   // TVMScript; decisions print as records
 * \endcode
 *
 * Files are numbered in the order they are written across the process, so a failing internal
 * check leaves, just before it, the modules the pass had made.
 */
#ifndef TVM_MEMPLAN_IR_DUMP_H_
#define TVM_MEMPLAN_IR_DUMP_H_

#include <string>

#include "ir/reflection.h"

namespace tvm_memplan {
namespace ir {

inline constexpr const char* kDumpDirOption = "tvm_memplan.dump_dir";

class PassDump {
 public:
  /*! \brief For pass `pass_name`, under the current PassContext. */
  explicit PassDump(std::string pass_name);
  bool enabled() const { return !dir_.empty(); }
  /*! \brief Write `value` (a module, a function, records, or text) as stage `stage`. */
  void Write(const std::string& stage, const AnyView& value) const;

 private:
  std::string pass_;
  std::string dir_;
};

/*! \brief Register `tvm_memplan.dump_dir` as a PassContext option (once, at import). */
void RegisterDumpOption();

}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_DUMP_H_
