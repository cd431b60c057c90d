import CDBus
#if canImport(Glibc)
import Glibc
#endif

/// Why a value can't be sent. Checked in Swift before libdbus sees the value: libdbus aborts the
/// process on invalid input, and the bus disconnects a peer that sends an invalid message.
public enum MarshallingError: Error, Equatable, Sendable, CustomStringConvertible {
    case stringContainsNUL
    case elementTypeMismatch(expected: String, found: String)
    case dictionaryKeyNotBasic(String)
    case emptyStructure
    case nestedTooDeeply
    case invalidSignature(String)
    case outOfMemory

    public var description: String {
        switch self {
        case .stringContainsNUL: return "a string contains a NUL character"
        case .elementTypeMismatch(let e, let f): return "a container of '\(e)' holds a '\(f)'"
        case .dictionaryKeyNotBasic(let t): return "dictionary key type '\(t)' is not basic"
        case .emptyStructure: return "a struct has no fields"
        case .nestedTooDeeply: return "values are nested deeper than D-Bus allows"
        case .invalidSignature(let s): return "'\(s)' is not a valid signature"
        case .outOfMemory: return "out of memory"
        }
    }
}

// MARK: - Validation (pure Swift)

extension DBusValue {
    /// Throws unless the value can be marshalled: types consistent, no NUL in strings, within depth limits.
    public func validate() throws(MarshallingError) { try validate(depth: 0) }

    /// `depth`: the containers around the value (1 for a variant's content). `typeChecked`: the value's signature is
    /// part of one already checked (a container's, or a variant's), so it isn't parsed again for each element.
    func validate(depth: Int, typeChecked: Bool = false) throws(MarshallingError) {
        switch self {
        case .string(let s):
            if Self.containsNUL(s) { throw .stringContainsNUL }
        case .variant(let inner):
            guard depth < DBusLimits.maxTotalDepth else { throw .nestedTooDeeply }
            let type = inner.type
            if !type.isBasic { try Self.checkSignature(type) }
            try inner.validate(depth: depth + 1, typeChecked: true)
        case .array(let elementType, let elements):
            guard depth < DBusLimits.maxTotalDepth else { throw .nestedTooDeeply }
            if !typeChecked { try Self.checkSignature(.array(elementType)) }
            for element in elements {
                guard element.isOf(elementType) else {
                    throw .elementTypeMismatch(expected: elementType.signature, found: element.type.signature)
                }
                try element.validate(depth: depth + 1, typeChecked: true)
            }
        case .dictionary(let keyType, let valueType, let entries):
            guard depth + 1 < DBusLimits.maxTotalDepth else { throw .nestedTooDeeply }
            guard keyType.isBasic else { throw .dictionaryKeyNotBasic(keyType.signature) }
            if !typeChecked { try Self.checkSignature(.dictionary(key: keyType, value: valueType)) }
            for entry in entries {
                guard entry.key.isOf(keyType) else {
                    throw .elementTypeMismatch(expected: keyType.signature, found: entry.key.type.signature)
                }
                guard entry.value.isOf(valueType) else {
                    throw .elementTypeMismatch(expected: valueType.signature, found: entry.value.type.signature)
                }
                try entry.key.validate(depth: depth + 2, typeChecked: true)
                try entry.value.validate(depth: depth + 2, typeChecked: true)
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw .emptyStructure }
            guard depth < DBusLimits.maxTotalDepth else { throw .nestedTooDeeply }
            if !typeChecked { try Self.checkSignature(type) }
            for field in fields { try field.validate(depth: depth + 1, typeChecked: true) }
        default:
            break
        }
    }

    /// Whether `s` holds a NUL, which a C string would end at: looked for by `memchr` in a native string.
    private static func containsNUL(_ s: String) -> Bool {
        s.utf8.withContiguousStorageIfAvailable { $0.isEmpty ? false : memchr($0.baseAddress!, 0, $0.count) != nil }
            ?? s.utf8.contains(0)
    }

    private static func checkSignature(_ type: DBusType) throws(MarshallingError) {
        let text = type.signature
        guard Signature(rawValue: text) != nil else {
            throw text.utf8.count > DBusLimits.maxSignatureLength ? .nestedTooDeeply : .invalidSignature(text)
        }
    }
}

// MARK: - Writing (after validation)

enum Marshaller {
    /// Appends validated values to a message. Returns false only when libdbus runs out of memory.
    static func append(_ values: [DBusValue], to message: OpaquePointer) -> Bool {
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for value in values where !append(value, to: &iter) { return false }
        return true
    }

    /// Appends `inner` in a variant whose signature the caller already has (a property's: see `Property.signature`).
    static func appendVariant(_ inner: DBusValue, signature: String, to message: OpaquePointer) -> Bool {
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        return container(typeCode("v"), signature, &iter) { append(inner, to: &$0) }
    }

    private static func appendBasic<T: BitwiseCopyable>(_ value: T, _ code: Int32, _ iter: inout DBusMessageIter) -> Bool {
        withUnsafePointer(to: value) { dbus_message_iter_append_basic(&iter, code, $0) != 0 }
    }

    private static func appendString(_ s: String, _ code: Int32, _ iter: inout DBusMessageIter) -> Bool {
        s.withCString { cString in
            var pointer: UnsafePointer<CChar>? = cString
            return dbus_message_iter_append_basic(&iter, code, &pointer) != 0
        }
    }

    private static func container(_ code: Int32, _ signature: String, _ iter: inout DBusMessageIter,
                                  _ body: (inout DBusMessageIter) -> Bool) -> Bool {
        signature.withCString { container(code, &iter, signature: $0, body) }
    }

    /// A container of type `code` filled by `body`: `signature` (a C string) that of its contents, none for a struct
    /// or a dict entry.
    private static func container(_ code: Int32, _ iter: inout DBusMessageIter, signature: UnsafePointer<CChar>? = nil,
                                  _ body: (inout DBusMessageIter) -> Bool) -> Bool {
        var sub = DBusMessageIter()
        guard dbus_message_iter_open_container(&iter, code, signature, &sub) != 0 else { return false }
        guard body(&sub) else {
            dbus_message_iter_abandon_container(&iter, &sub)
            return false
        }
        return dbus_message_iter_close_container(&iter, &sub) != 0
    }

    /// `value` in a variant: the signature of a basic type is its code, made without building a String.
    private static func appendVariant(_ value: DBusValue, _ iter: inout DBusMessageIter) -> Bool {
        let type = value.type
        guard type.isBasic else { return container(typeCode("v"), type.signature, &iter) { append(value, to: &$0) } }
        let signature: (CChar, CChar) = (CChar(truncatingIfNeeded: type.code), 0)
        return withUnsafePointer(to: signature) { pair in
            pair.withMemoryRebound(to: CChar.self, capacity: 2) { container(typeCode("v"), &iter, signature: $0) { append(value, to: &$0) } }
        }
    }

    static func append(_ value: DBusValue, to iter: inout DBusMessageIter) -> Bool {
        let code = value.typeCode
        switch value {
        case .byte(let v): return appendBasic(v, code, &iter)
        case .boolean(let v): return appendBasic(dbus_bool_t(v ? 1 : 0), code, &iter)
        case .int16(let v): return appendBasic(v, code, &iter)
        case .uint16(let v): return appendBasic(v, code, &iter)
        case .int32(let v): return appendBasic(v, code, &iter)
        case .uint32(let v): return appendBasic(v, code, &iter)
        case .int64(let v): return appendBasic(v, code, &iter)
        case .uint64(let v): return appendBasic(v, code, &iter)
        case .double(let v): return appendBasic(v, code, &iter)
        case .unixFD(let v): return appendBasic(v, code, &iter)
        case .string(let v): return appendString(v, code, &iter)
        case .objectPath(let v): return appendString(v.rawValue, code, &iter)
        case .signature(let v): return appendString(v.rawValue, code, &iter)
        case .variant(let inner):
            return appendVariant(inner, &iter)
        case .array(let elementType, let elements):
            return container(code, elementType.signature, &iter) { sub in
                elements.allSatisfy { append($0, to: &sub) }
            }
        case .dictionary(let keyType, let valueType, let entries):
            let entrySignature = "{" + keyType.signature + valueType.signature + "}"
            return container(code, entrySignature, &iter) { sub in
                entries.allSatisfy { entry in
                    container(typeCode("e"), &sub) { e in
                        append(entry.key, to: &e) && append(entry.value, to: &e)
                    }
                }
            }
        case .structure(let fields):
            return container(code, &iter) { sub in fields.allSatisfy { append($0, to: &sub) } }
        }
    }
}

// MARK: - Reading (input libdbus has already validated)

enum Unmarshaller {
    static func values(of message: OpaquePointer) -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        var result: [DBusValue] = []
        repeat {
            if let value = read(&iter) { result.append(value) }
        } while dbus_message_iter_next(&iter) != 0
        return result
    }

    private static func basic<T: BitwiseCopyable>(_ iter: inout DBusMessageIter, _ initial: T) -> T {
        var v = initial
        withUnsafeMutablePointer(to: &v) { dbus_message_iter_get_basic(&iter, $0) }
        return v
    }

    private static func string(_ iter: inout DBusMessageIter) -> String {
        var pointer: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &pointer)
        return pointer.map { String(cString: $0) } ?? ""
    }

    /// The complete type at the iterator, from libdbus's own signature of it.
    private static func currentType(_ iter: inout DBusMessageIter) -> DBusType? {
        guard let raw = dbus_message_iter_get_signature(&iter) else { return nil }
        defer { dbus_free(raw) }
        return DBusType(String(cString: raw))
    }

    private static func children(_ iter: inout DBusMessageIter, _ each: (inout DBusMessageIter) -> Void) {
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &sub)
        while dbus_message_iter_get_arg_type(&sub) != DBUS_TYPE_INVALID {
            each(&sub)
            dbus_message_iter_next(&sub)
        }
    }

    static func read(_ iter: inout DBusMessageIter) -> DBusValue? {
        let code = dbus_message_iter_get_arg_type(&iter)
        switch code {
        case typeCode("y"): return .byte(basic(&iter, UInt8(0)))
        case typeCode("b"): return .boolean(basic(&iter, dbus_bool_t(0)) != 0)
        case typeCode("n"): return .int16(basic(&iter, Int16(0)))
        case typeCode("q"): return .uint16(basic(&iter, UInt16(0)))
        case typeCode("i"): return .int32(basic(&iter, Int32(0)))
        case typeCode("u"): return .uint32(basic(&iter, UInt32(0)))
        case typeCode("x"): return .int64(basic(&iter, Int64(0)))
        case typeCode("t"): return .uint64(basic(&iter, UInt64(0)))
        case typeCode("d"): return .double(basic(&iter, Double(0)))
        case typeCode("h"): return .unixFD(basic(&iter, Int32(-1)))
        case typeCode("s"): return .string(string(&iter))
        case typeCode("o"): return ObjectPath(rawValue: string(&iter)).map(DBusValue.objectPath)
        case typeCode("g"): return Signature(rawValue: string(&iter)).map(DBusValue.signature)
        case typeCode("v"):
            var inner: DBusValue?
            children(&iter) { inner = read(&$0) }
            return inner.map(DBusValue.variant)
        case typeCode("r"):
            var fields: [DBusValue] = []
            children(&iter) { if let v = read(&$0) { fields.append(v) } }
            return .structure(fields)
        case typeCode("a"):
            switch currentType(&iter) {
            case .array(let elementType)?:
                var elements: [DBusValue] = []
                children(&iter) { if let v = read(&$0) { elements.append(v) } }
                return .array(elementType, elements)
            case .dictionary(let keyType, let valueType)?:
                var entries: [DBusValue.DictEntry] = []
                children(&iter) { entry in
                    var kv = DBusMessageIter()
                    dbus_message_iter_recurse(&entry, &kv)
                    guard let key = read(&kv), dbus_message_iter_next(&kv) != 0, let value = read(&kv) else { return }
                    entries.append(.init(key, value))
                }
                return .dictionary(key: keyType, value: valueType, entries)
            default:
                return nil
            }
        default:
            return nil
        }
    }
}

let DBUS_TYPE_INVALID: Int32 = 0
