/*!
 * \file ir/reflection.cc
 * \brief Lazy resolution of type keys, fields and globals, with errors that name what is missing.
 */
#include "ir/reflection.h"

#include <dlfcn.h>
#include <tvm/ffi/reflection/accessor.h>

#include <cstring>
#include <string_view>

namespace tvm_memplan {
namespace ir {

namespace {

[[noreturn]] void ThrowUnsupported(const std::string& what) {
  TVM_FFI_THROW(RuntimeError) << what << ": the installed TVM does not match the IR schema "
                              << "tvm-memplan was built for (TVM " << kSupportedTVMVersion << ")";
  TVM_FFI_UNREACHABLE();
}

std::optional<int32_t> LookupTypeIndex(const char* key) {
  TVMFFIByteArray bytes{key, std::strlen(key)};
  int32_t index = -1;
  if (TVMFFITypeKeyToIndex(&bytes, &index) != 0) {
    // The failed lookup left an error in the thread-local slot; drop it.
    TVMFFIObjectHandle error = nullptr;
    TVMFFIErrorMoveFromRaised(&error);
    if (error != nullptr) TVMFFIObjectDecRef(error);
    return std::nullopt;
  }
  return index;
}

const TVMFFIFieldInfo* LookupField(int32_t type_index, const char* name) {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(type_index);
  const TVMFFIFieldInfo* found = nullptr;
  std::string_view wanted(name);
  ffi::reflection::ForEachFieldInfoWithEarlyStop(info, [&](const TVMFFIFieldInfo* field) {
    if (std::string_view(field->name.data, field->name.size) == wanted) {
      found = field;
      return true;
    }
    return false;
  });
  return found;
}

void* LookupExportedSymbol(const char* mangled) {
  // RTLD_NOLOAD: only find the library `import tvm` loaded, never load a second copy.
  static void* library = dlopen(kTVMCompilerLibrary, RTLD_LAZY | RTLD_NOLOAD);
  return library == nullptr ? nullptr : dlsym(library, mangled);
}

}  // namespace

int32_t TypeKey::index() const {
  int32_t index = index_.load(std::memory_order_relaxed);
  if (TVM_FFI_PREDICT_TRUE(index >= 0)) return index;
  std::optional<int32_t> found = LookupTypeIndex(key_);
  if (!found) ThrowUnsupported(std::string("unknown TVM type key `") + key_ + "`");
  index_.store(*found, std::memory_order_relaxed);
  return *found;
}

bool TypeKey::Exists() const {
  return index_.load(std::memory_order_relaxed) >= 0 || LookupTypeIndex(key_).has_value();
}

bool TypeKey::IsInstanceSlow(int32_t type_index) const {
  int32_t mine = index();  // resolves the key on first use
  if (type_index == mine) return true;
  if (type_index < ffi::TypeIndex::kTVMFFIStaticObjectBegin) return false;
  std::atomic<int32_t>& slot = answers_[type_index % kCacheSize];
  int32_t depth = depth_.load(std::memory_order_relaxed);
  if (depth < 0) {
    depth = TVMFFIGetTypeInfo(mine)->type_depth;
    depth_.store(depth, std::memory_order_relaxed);
  }
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(type_index);
  bool answer = info->type_depth > depth && info->type_ancestors[depth]->type_index == mine;
  slot.store((type_index << 2) | 2 | static_cast<int32_t>(answer), std::memory_order_relaxed);
  return answer;
}

const TVMFFIFieldInfo* FieldKey::info() const {
  const TVMFFIFieldInfo* info = info_.load(std::memory_order_acquire);
  if (TVM_FFI_PREDICT_TRUE(info != nullptr)) return info;
  info = LookupField(owner_.index(), name_);
  if (info == nullptr) {
    ThrowUnsupported(std::string("TVM type `") + owner_.key() + "` has no field `" + name_ + "`");
  }
  info_.store(info, std::memory_order_release);
  return info;
}

bool FieldKey::Exists() const {
  return owner_.Exists() && LookupField(owner_.index(), name_) != nullptr;
}

void FieldKey::CheckOwner(const Object* obj) const {
  if (TVM_FFI_PREDICT_TRUE(owner_.IsInstance(obj))) return;
  TVM_FFI_THROW(TypeError) << "cannot read field `" << name_ << "` of `" << owner_.key()
                           << "` from a value of type `"
                           << (obj ? TypeKeyOf(obj->type_index()) : std::string("None")) << "`";
}

Any FieldKey::Get(const Object* obj) const {
  CheckOwner(obj);
  const TVMFFIFieldInfo* field = info();
  Any result;
  void* addr = const_cast<char*>(reinterpret_cast<const char*>(obj)) + field->offset;
  TVM_FFI_CHECK_SAFE_CALL(field->getter(addr, reinterpret_cast<TVMFFIAny*>(&result)));
  return result;
}

const Object* FieldKey::Borrow(const Object* obj) const {
  constexpr int kInPlace = 1, kThroughGetter = 2;
  CheckOwner(obj);
  const TVMFFIFieldInfo* field = info();
  const char* addr = reinterpret_cast<const char*>(obj) + field->offset;
  int how = borrow_in_place_.load(std::memory_order_relaxed);
  if (TVM_FFI_PREDICT_TRUE(how == kInPlace)) return *reinterpret_cast<const Object* const*>(addr);
  // The getter hands out another reference to the object the field stores; once that reference
  // is dropped, the field still holds the object.
  Any value = Get(obj);
  if (value == nullptr) return nullptr;
  if (value.type_index() < ffi::TypeIndex::kTVMFFIStaticObjectBegin) {
    TVM_FFI_THROW(TypeError) << "field `" << owner_.key() << "." << name_ << "` holds a `"
                             << value.GetTypeKey() << "`, not an object";
  }
  const Object* held = value.as<Object>();
  if (how == 0) {
    bool in_place = field->size == sizeof(const Object*) &&
                    *reinterpret_cast<const Object* const*>(addr) == held;
    borrow_in_place_.store(in_place ? kInPlace : kThroughGetter, std::memory_order_relaxed);
  }
  return held;
}

void FieldKey::SetOnFresh(Object* obj, AnyView value) const {
  CheckOwner(obj);
  const TVMFFIFieldInfo* field = info();
  void* addr = reinterpret_cast<char*>(obj) + field->offset;
  TVM_FFI_CHECK_SAFE_CALL(
      ffi::reflection::CallFieldSetter(field, addr, reinterpret_cast<const TVMFFIAny*>(&value)));
}

const Function& GlobalFunc::get() const {
  std::call_once(once_, [this]() {
    Optional<Function> func = Function::GetGlobal(name_);
    if (!func) ThrowUnsupported(std::string("TVM has no global function `") + name_ + "`");
    func_ = *func;
  });
  return func_;
}

bool GlobalFunc::Exists() const { return Function::GetGlobal(name_).has_value(); }

void* ExportedSymbol::address() const {
  void* address = address_.load(std::memory_order_acquire);
  if (TVM_FFI_PREDICT_TRUE(address != nullptr)) return address;
  address = LookupExportedSymbol(mangled_);
  if (address == nullptr) {
    ThrowUnsupported(std::string("TVM does not export the C++ symbol `") + mangled_ + "` from " +
                     kTVMCompilerLibrary);
  }
  address_.store(address, std::memory_order_release);
  return address;
}

bool ExportedSymbol::Exists() const {
  return address_.load(std::memory_order_acquire) != nullptr ||
         LookupExportedSymbol(mangled_) != nullptr;
}

std::string TypeKeyOf(int32_t type_index) { return ffi::TypeIndexToTypeKey(type_index); }

std::string TypeKeyOf(const ObjectRef& ref) {
  return ref.defined() ? TypeKeyOf(ref->type_index()) : std::string("None");
}

ObjectRef ShallowCopy(const ObjectRef& node) {
  static ffi::reflection::TypeAttrColumn column(ffi::type_attr::kShallowCopy);
  AnyView copier = column[node->type_index()];
  if (copier == nullptr) {
    ThrowUnsupported("TVM type `" + TypeKeyOf(node) + "` cannot be shallow-copied");
  }
  return copier.cast<Function>()(node.get()).cast<ObjectRef>();
}

ObjectRef WithFields(const ObjectRef& node, std::initializer_list<FieldUpdate> updates) {
  bool changed = false;
  for (const FieldUpdate& update : updates) {
    if (!update.first->Get(node.get()).same_as(update.second)) {
      changed = true;
      break;
    }
  }
  if (!changed) return node;
  ObjectRef copy = ShallowCopy(node);
  for (const FieldUpdate& update : updates) {
    update.first->SetOnFresh(const_cast<Object*>(copy.get()), update.second);
  }
  return copy;
}

}  // namespace ir
}  // namespace tvm_memplan
