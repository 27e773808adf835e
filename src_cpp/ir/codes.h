/*!
 * \file ir/codes.h
 * \brief Code families: the string codes records carry to say why (why a concatenation keeps its
 *        copy, why a tensor is not planned, where an allocation lives, ...). Each family is one
 *        table of (value, sentence, remedy), declared beside the record that carries its codes;
 *        reflection exports every table (`tvm_memplan.analysis.codes(family)`), so the field
 *        docs, the docs pages and the report read the same text.
 *
 * \code
 *   namespace concat {
 *   inline constexpr const char* kUnaligned = "unaligned";
 *   inline constexpr Code kCodes[] = {
 *       {kUnaligned, "a slice does not start at a multiple of the alignment",
 *        "inputs whose bytes are multiples of the alignment"}, ...};
 *   }  // namespace concat
 *   RegisterCodeFamily("concat", concat::kCodes);       // in a static init block
 *   CodeFieldDoc("Why it keeps its copy", concat::kCodes)  // a field's doc, listing the codes
 * \endcode
 */
#ifndef TVM_MEMPLAN_IR_CODES_H_
#define TVM_MEMPLAN_IR_CODES_H_

#include <cstddef>

namespace tvm_memplan {
namespace ir {

/*! \brief One code of a family: its value, the sentence that explains it, and what would lift
 *         it (or why nothing can; "" where the code is no refusal). */
struct Code {
  const char* value;
  const char* sentence;
  const char* remedy;
};

/*! \brief Makes family `name` answer `tvm_memplan.analysis.codes(name)`. */
void RegisterCodeFamily(const char* name, const Code* codes, size_t count);
template <size_t N>
void RegisterCodeFamily(const char* name, const Code (&codes)[N]) {
  RegisterCodeFamily(name, codes, N);
}

/*! \brief `lead`, then each code with its sentence: the doc of a field holding the codes (kept
 *         for the process; a `char*`, which tvm-ffi 0.1.15's def_ro takes as a doc). */
char* CodeFieldDoc(const char* lead, const Code* codes, size_t count);
template <size_t N>
char* CodeFieldDoc(const char* lead, const Code (&codes)[N]) {
  return CodeFieldDoc(lead, codes, N);
}

}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_CODES_H_
