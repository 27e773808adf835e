/*!
 * \file ir/reflection.h
 * \brief The three handles through which the core reaches TVM: type keys, reflected fields and
 *        registered global functions, plus copy-on-write field updates.
 *
 * The apache-tvm wheel ships no compiler headers, so TVM nodes are opaque `ffi::Object`s to us.
 * Everything we know about them goes through the tvm-ffi type table:
 *
 * \code
 *   const TypeKey kFor("tirx.For");            // resolved to a type index on first use
 *   const FieldKey kForBody(kFor, "body");     // resolved to a TVMFFIFieldInfo on first use
 *   const GlobalFunc kSimplify("sym.AnalyzerSimplify");
 *   if (kFor.IsInstance(node)) body = kForBody.Get(node);
 * \endcode
 *
 * A fourth handle, ExportedSymbol, reaches the few C++ functions that TVM exports but registers no
 * global function for (registering target-kind attributes and PassContext options).
 *
 * Handles are declared in one place only (schema.def, expanded by schema.h); pass code uses the
 * typed views built on them. Resolution is lazy because the keys exist only once `import tvm`
 * has run, and every failure names the key, the field or the function and the TVM version we
 * support, instead of crashing.
 */
#ifndef TVM_MEMPLAN_IR_REFLECTION_H_
#define TVM_MEMPLAN_IR_REFLECTION_H_

#include <tvm/ffi/tvm_ffi.h>

#include <atomic>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace tvm_memplan {

namespace ffi = ::tvm::ffi;
using ffi::Any;
using ffi::AnyView;
using ffi::Array;
using ffi::Function;
using ffi::Map;
using ffi::Object;
using ffi::ObjectRef;
using ffi::Optional;
using ffi::String;

namespace ir {

#ifndef TVM_MEMPLAN_TVM_VERSION
#error "TVM_MEMPLAN_TVM_VERSION is defined by CMakeLists.txt from pyproject.toml's apache-tvm pin"
#endif
/*! \brief The TVM release whose IR schema this layer is written against: pyproject.toml's pin,
 *         compiled in by CMakeLists.txt. */
inline constexpr const char* kSupportedTVMVersion = TVM_MEMPLAN_TVM_VERSION;

/*! \brief A TVM type key, resolved to its runtime type index on first use. */
class TypeKey {
 public:
  explicit constexpr TypeKey(const char* key) : key_(key) {}
  TypeKey(const TypeKey&) = delete;
  TypeKey& operator=(const TypeKey&) = delete;

  const char* key() const { return key_; }
  /*! \brief The runtime type index; throws naming the key when TVM does not define it. */
  int32_t index() const;
  /*! \brief Whether TVM defines this key (never throws). */
  bool Exists() const;

  /*! \brief Whether `type_index` is this type or derives from it: the type itself and recent
   *         answers inline (passes ask the same few questions about millions of nodes), the
   *         hierarchy out of line. */
  bool IsInstance(int32_t type_index) const {
    if (type_index == index_.load(std::memory_order_relaxed)) return true;
    if (type_index >= ffi::TypeIndex::kTVMFFIStaticObjectBegin) {
      int32_t cached = answers_[type_index % kCacheSize].load(std::memory_order_relaxed);
      if ((cached >> 2) == type_index && (cached & 2)) return cached & 1;
    }
    return IsInstanceSlow(type_index);
  }
  bool IsInstance(const Object* obj) const { return obj && IsInstance(obj->type_index()); }
  bool IsInstance(const ObjectRef& ref) const { return IsInstance(ref.get()); }
  bool IsInstance(const AnyView& value) const { return IsInstance(value.type_index()); }

 private:
  bool IsInstanceSlow(int32_t type_index) const;

  const char* key_;
  mutable std::atomic<int32_t> index_{-1};
  /*! \brief Depth of this type in the hierarchy (-1 until first needed). */
  mutable std::atomic<int32_t> depth_{-1};
  /*! \brief Recent answers of IsInstance, direct-mapped by type index: (index << 2) | 2 |
   *         answer. */
  static constexpr int kCacheSize = 32;
  mutable std::atomic<int32_t> answers_[kCacheSize] = {};
};

/*! \brief A reflected field of a TVM node type (found on the type or one of its ancestors). */
class FieldKey {
 public:
  constexpr FieldKey(const TypeKey& owner, const char* name) : owner_(owner), name_(name) {}
  FieldKey(const FieldKey&) = delete;
  FieldKey& operator=(const FieldKey&) = delete;

  const TypeKey& owner() const { return owner_; }
  const char* name() const { return name_; }
  /*! \brief The field's reflection record; throws when the owner type has no such field. */
  const TVMFFIFieldInfo* info() const;
  /*! \brief Whether the owner type exists and has this field (never throws). */
  bool Exists() const;

  /*! \brief Read the field of `obj`, which must be an instance of the owner type. */
  Any Get(const Object* obj) const;
  /*!
   * \brief The object the field of `obj` holds, without taking a reference: valid as long as
   *        `obj` holds it. nullptr for None; a TypeError for a field that holds no object.
   *        For walks that only look: a field stored as an object pointer is read in place, with
   *        no call and no reference counting.
   */
  const Object* Borrow(const Object* obj) const;
  Any Get(const ObjectRef& obj) const { return Get(obj.get()); }
  template <typename T>
  T Get(const ObjectRef& obj) const {
    if constexpr (std::is_same_v<T, ObjectRef>) {
      // The common case, without the getter's call and the Any round trip.
      const Object* held = Borrow(obj.get());
      return held ? ffi::GetRef<ObjectRef>(held) : ObjectRef();
    } else {
      return Cast<T>(Get(obj.get()));
    }
  }

  /*!
   * \brief Write the field of an object nobody else holds yet (a fresh shallow copy).
   * \note TVM registers setters even for read-only fields; the setter type-checks `value`.
   */
  void SetOnFresh(Object* obj, AnyView value) const;

 private:
  void CheckOwner(const Object* obj) const;
  template <typename T>
  T Cast(Any value) const;

  const TypeKey& owner_;
  const char* name_;
  mutable std::atomic<const TVMFFIFieldInfo*> info_{nullptr};
  /*!
   * \brief Whether the field is stored as an object pointer, so Borrow can read it in place:
   *        learnt from the first non-null value (the getter's object must be the pointer
   *        stored there). 0: not known yet, 1: yes, 2: no.
   */
  mutable std::atomic<int> borrow_in_place_{0};
};

/*! \brief A global function registered by TVM, looked up on first call. */
class GlobalFunc {
 public:
  explicit GlobalFunc(const char* name) : name_(name) {}
  GlobalFunc(const GlobalFunc&) = delete;
  GlobalFunc& operator=(const GlobalFunc&) = delete;

  const char* name() const { return name_; }
  const Function& get() const;
  bool Exists() const;

  template <typename... Args>
  Any operator()(Args&&... args) const {
    return get()(std::forward<Args>(args)...);
  }

 private:
  const char* name_;
  mutable std::once_flag once_;
  mutable Function func_;
};

/*!
 * \brief A C++ function exported by TVM's compiler library, found with dlsym on first use.
 *
 * The mangled name pins the parameter types (a changed signature is a missing symbol, which the
 * self-check reports at import), not the return type: declare the pointer type next to the use,
 * from the demangled declaration recorded in schema.def.
 */
class ExportedSymbol {
 public:
  explicit constexpr ExportedSymbol(const char* mangled) : mangled_(mangled) {}
  ExportedSymbol(const ExportedSymbol&) = delete;
  ExportedSymbol& operator=(const ExportedSymbol&) = delete;

  const char* mangled() const { return mangled_; }
  /*! \brief The symbol's address; throws naming the symbol when TVM does not export it. */
  void* address() const;
  /*! \brief Whether the loaded TVM exports the symbol (never throws). */
  bool Exists() const;
  /*! \brief The address as a function pointer of type `F`. */
  template <typename F>
  F As() const {
    return reinterpret_cast<F>(address());
  }

 private:
  const char* mangled_;
  mutable std::atomic<void*> address_{nullptr};
};

/*! \brief The library ExportedSymbols are looked up in (already loaded by `import tvm`). */
inline constexpr const char* kTVMCompilerLibrary = "libtvm_compiler.so";

/*! \brief `type.key` of a runtime type index, for messages. */
std::string TypeKeyOf(int32_t type_index);
/*! \brief `type.key` of an object or "None". */
std::string TypeKeyOf(const ObjectRef& ref);

/*! \brief A shallow copy through the reflected `__ffi_shallow_copy__` attribute. */
ObjectRef ShallowCopy(const ObjectRef& node);

/*! \brief One `field = value` update for WithFields. */
using FieldUpdate = std::pair<const FieldKey*, Any>;

/*!
 * \brief Copy-on-write update: `node` itself when every value is already the same object,
 *        otherwise a shallow copy with the fields replaced (span and other fields kept).
 */
ObjectRef WithFields(const ObjectRef& node, std::initializer_list<FieldUpdate> updates);

// ------------------------------------------------------------------------------------------
// Implementation details of the templates above.
// ------------------------------------------------------------------------------------------
template <typename T>
T FieldKey::Cast(Any value) const {
  // The stored type first: moved out, no reference count taken.
  if constexpr (ffi::TypeTraits<T>::storage_enabled) {
    if (auto stored = std::move(value).template as<T>()) return *std::move(stored);
  }
  if (auto typed = value.try_cast<T>()) return *std::move(typed);
  TVM_FFI_THROW(TypeError) << "field `" << owner_.key() << "." << name_
                           << "` holds an unexpected value of type `" << value.GetTypeKey()
                           << "` (tvm-memplan supports TVM " << kSupportedTVMVersion << ")";
  TVM_FFI_UNREACHABLE();
}

}  // namespace ir
}  // namespace tvm_memplan

#endif  // TVM_MEMPLAN_IR_REFLECTION_H_
