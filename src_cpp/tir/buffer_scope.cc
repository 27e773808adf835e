/*!
 * \file tir/buffer_scope.cc
 * \brief ChangeBufferScopes: find the views of the moved buffers, then one Rewriter pass.
 */
#include "tir/buffer_scope.h"

#include <tvm/ffi/extra/structural_visit.h>

#include "ir/rewriter.h"

namespace tvm_memplan {
namespace tir {

using namespace ir;

namespace {

/*!
 * \brief Adds to `changes` every DeclBuffer that views a changed buffer in that buffer's old
 *        scope, in definition order so that views of views follow. Expressions hold no
 *        declarations and are skipped.
 */
void AddViews(const ObjectRef& stmt, std::vector<ScopeChange>* changes) {
  std::unordered_map<const Object*, std::pair<std::string, std::string>> scopes;  // old, new
  for (const auto& [buffer, scope] : *changes) scopes[buffer.get()] = {buffer.scope(), scope};
  ffi::StructuralVisit(
      stmt,
      [&](const ObjectRef& node,
          ffi::StructuralVisitorObj* engine) -> Optional<ffi::VisitInterrupt> {
        if (!node.defined()) return std::nullopt;
        int32_t t = node->type_index();
        if (schema::type::DeclBuffer.IsInstance(t)) {
          DeclBuffer decl(node);
          std::optional<Buffer> base = decl.viewed_buffer();
          auto it = base ? scopes.find(base->get()) : scopes.end();
          if (it != scopes.end() && decl.buffer().scope() == it->second.first) {
            changes->emplace_back(decl.buffer(), it->second.second);
            scopes[decl.buffer().get()] = it->second;
          }
        } else if (t == ffi::TypeIndex::kTVMFFIArray || schema::type::Stmt.IsInstance(t)) {
          engine->DefaultVisitExpected(node).value();
        }
        return std::nullopt;
      });
}

}  // namespace

ObjectRef ChangeBufferScopes(const ObjectRef& stmt, const std::vector<ScopeChange>& changes,
                             BufferReplacements* replaced) {
  if (changes.empty()) return stmt;
  std::vector<ScopeChange> all = changes;
  AddViews(stmt, &all);
  Rewriter rewriter;
  std::unordered_map<const Object*, Buffer> new_buffers;  // keyed by the new var
  for (const auto& [buffer, scope] : all) {
    Buffer moved = buffer.WithScope(scope);
    rewriter.RemapVar(buffer.ref(), moved.ref());
    new_buffers.emplace(moved.get(), moved);
    if (replaced) replaced->emplace_back(buffer, moved);
  }
  // The var inside `B.data` is already replaced here; the call's pointer type still names the old
  // scope, so the call is built again.
  rewriter.PostOrder<Call>([&](const Call& call) -> ObjectRef {
    std::optional<Buffer> buffer = BufferOfDataPointer(call);
    if (!buffer || !new_buffers.count(buffer->get())) return call;
    return BufferDataPointer(*buffer);
  });
  return rewriter(stmt);
}

}  // namespace tir
}  // namespace tvm_memplan
