/*!
 * \file ir/options.h
 * \brief Pass options declared once: each option is a member of its options object, its default
 *        the member's initialiser, its name and help given to reflection here, which also reads
 *        the default off a default-constructed object. Python builds the wrappers' signatures
 *        and docstrings from the same reflection (python/tvm_memplan/_options.py).
 *
 * \code
 *   class MyOptionsObj : public ffi::Object {
 *    public:
 *     bool fast = true;                      // the one place the default is written
 *     ...
 *   };
 *   void MyOptionsObj::RegisterReflection() {
 *     OptionsDef<MyOptionsObj>().Option("fast", &MyOptionsObj::fast, "Go fast.");
 *   }
 * \endcode
 */
#ifndef TVM_MEMPLAN_IR_OPTIONS_H_
#define TVM_MEMPLAN_IR_OPTIONS_H_

#include <tvm/ffi/reflection/registry.h>

#include "ir/reflection.h"

namespace tvm_memplan {

/*! \brief Reflection of an options object, one `Option` per member. */
template <typename OptionsObj>
class OptionsDef {
 public:
  template <typename T>
  OptionsDef& Option(const char* name, T OptionsObj::* member, const char* help) {
    // The default is the member's initialiser, read off an object made with no arguments.
    static const ffi::ObjectPtr<OptionsObj> defaults = ffi::make_object<OptionsObj>();
    // As `char*`: tvm-ffi 0.1.15 records a field's doc only from that type, and drops a
    // `const char*` (what a literal decays to) without a word.
    def_.def_ro(name, member, const_cast<char*>(help),
                ffi::reflection::DefaultValue((*defaults).*member));
    return *this;
  }

 private:
  ffi::reflection::ObjectDef<OptionsObj> def_;
};

}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_OPTIONS_H_
