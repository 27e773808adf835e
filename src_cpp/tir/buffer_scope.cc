/*!
 * \file tir/buffer_scope.cc
 * \brief ChangeBufferScopes: find the views of the moved buffers, then one Rewriter pass.
 */
#include "tir/buffer_scope.h"

#include <functional>

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
  std::function<void(const ObjectRef&)> visit = [&](const ObjectRef& node) {
    if (std::optional<DeclBuffer> decl = As<DeclBuffer>(node)) {
      std::optional<Buffer> base = decl->viewed_buffer();
      auto it = base ? scopes.find(base->get()) : scopes.end();
      if (it != scopes.end() && decl->buffer().scope() == it->second.first) {
        changes->emplace_back(decl->buffer(), it->second.second);
        scopes[decl->buffer().get()] = it->second;
      }
      return;
    }
    ForEachChildStmt(node, visit);
  };
  visit(stmt);
}

}  // namespace

ScopeChanges::ScopeChanges(const ObjectRef& stmt, const std::vector<ScopeChange>& changes) {
  if (changes.empty()) return;
  std::vector<ScopeChange> all = changes;
  AddViews(stmt, &all);
  for (const auto& [buffer, scope] : all) {
    Buffer moved = buffer.WithScope(scope);
    replacements_.emplace_back(buffer, moved);
    moved_.emplace(buffer.get(), moved);
    new_vars_.emplace(moved.get(), moved);
  }
}

Buffer ScopeChanges::Moved(const Buffer& buffer) const {
  auto it = moved_.find(buffer.get());
  return it == moved_.end() ? buffer : it->second;
}

void ScopeChanges::AddTo(Rewriter* rewriter) const {
  if (empty()) return;
  for (const auto& [old_buffer, moved] : replacements_) rewriter->RemapVar(old_buffer, moved);
  // The var inside `B.data` is already replaced here; the call's pointer type still names the old
  // scope, so the call is built again.
  rewriter->PostOrder<Call>([this](const Call& call) -> ObjectRef {
    std::optional<Buffer> buffer = BufferOfDataPointer(call);
    if (!buffer || !new_vars_.count(buffer->get())) return call;
    return BufferDataPointer(*buffer);
  });
}

ObjectRef ChangeBufferScopes(const ObjectRef& stmt, const std::vector<ScopeChange>& changes) {
  ScopeChanges scope_changes(stmt, changes);
  if (scope_changes.empty()) return stmt;
  Rewriter rewriter;
  scope_changes.AddTo(&rewriter);
  return rewriter(stmt);
}

}  // namespace tir
}  // namespace tvm_memplan
