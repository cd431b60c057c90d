/// One D-Bus value of any type, nested to the specification's limits.
///
/// Containers carry their element types so that empty ones marshal with the right signature. Only a variant's
/// value is boxed (`indirect`): a page of books is thousands of values, each of which would be an allocation.
///
/// ```swift
/// let metadata: DBusValue = .vardict(["xesam:title": .string("Chapter 1"), "mpris:length": .int64(60_000_000)])
/// metadata.type.signature          // "a{sv}"
/// ```
public enum DBusValue: Hashable, Sendable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    /// A string: valid UTF-8 (every Swift string is) without NUL characters.
    case string(String)
    case objectPath(ObjectPath)
    case signature(Signature)
    /// A Unix file descriptor. One received is a duplicate owned by the receiver, who must close it.
    case unixFD(Int32)
    indirect case variant(DBusValue)
    case array(DBusType, [DBusValue])
    case dictionary(key: DBusType, value: DBusType, [DictEntry])
    case structure([DBusValue])

    public struct DictEntry: Hashable, Sendable {
        public var key: DBusValue
        public var value: DBusValue
        public init(_ key: DBusValue, _ value: DBusValue) { self.key = key; self.value = value }
    }

    /// The value's complete type.
    public var type: DBusType {
        switch self {
        case .byte: return .byte
        case .boolean: return .boolean
        case .int16: return .int16
        case .uint16: return .uint16
        case .int32: return .int32
        case .uint32: return .uint32
        case .int64: return .int64
        case .uint64: return .uint64
        case .double: return .double
        case .string: return .string
        case .objectPath: return .objectPath
        case .signature: return .signature
        case .unixFD: return .unixFD
        case .variant: return .variant
        case .array(let element, _): return .array(element)
        case .dictionary(let key, let value, _): return .dictionary(key: key, value: value)
        case .structure(let fields): return .structure(fields.map(\.type))
        }
    }

    /// The code of the value's type (libdbus's), without building the type: a struct's would be an allocation.
    var typeCode: Int32 {
        switch self {
        case .array, .dictionary: return DBus.typeCode("a")
        case .structure: return DBus.typeCode("r")
        case .variant: return DBus.typeCode("v")
        default: return type.code
        }
    }

    /// Whether the value is of `type`: ``type`` `== type`, compared field by field without building the value's type.
    func isOf(_ type: DBusType) -> Bool {
        switch self {
        case .structure(let fields):
            guard case .structure(let types) = type, fields.count == types.count else { return false }
            return zip(fields, types).allSatisfy { $0.isOf($1) }
        case .array(let element, _):
            guard case .array(let expected) = type else { return false }
            return element == expected
        case .dictionary(let key, let value, _):
            guard case .dictionary(let expectedKey, let expectedValue) = type else { return false }
            return key == expectedKey && value == expectedValue
        default:
            return self.type == type
        }
    }
}

// MARK: - Building values

extension DBusValue {
    /// `as`
    public static func strings(_ values: [String]) -> DBusValue { .array(.string, values.map(DBusValue.string)) }
    /// `ao`
    public static func objectPaths(_ values: [ObjectPath]) -> DBusValue {
        .array(.objectPath, values.map(DBusValue.objectPath))
    }
    /// `a{sv}`, the usual property-bag type; keys in sorted order so the output is stable.
    public static func vardict(_ values: [String: DBusValue]) -> DBusValue {
        .dictionary(key: .string, value: .variant, values.sorted { $0.key < $1.key }.map {
            DictEntry(.string($0.key), .variant($0.value))
        })
    }
    /// `a{sv}` of `entries` in the order given, for a dictionary made often (``vardict(_:)`` hashes and sorts its keys).
    public static func vardict(ordered entries: KeyValuePairs<String, DBusValue>) -> DBusValue {
        vardict(ordered: entries.map { (key: $0.key, value: $0.value) })
    }
    /// `a{sv}` of `entries` in the order given, for a dictionary with entries that are not always there.
    public static func vardict(ordered entries: [(key: String, value: DBusValue)]) -> DBusValue {
        .dictionary(key: .string, value: .variant, entries.map { DictEntry(.string($0.key), .variant($0.value)) })
    }
    /// An empty `a{sv}`.
    public static let emptyVardict = DBusValue.dictionary(key: .string, value: .variant, [])
}

// MARK: - Reading values

extension DBusValue {
    /// The value inside any number of variants.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }
    public var string: String? { if case .string(let v) = unwrapped { return v }; return nil }
    public var bool: Bool? { if case .boolean(let v) = unwrapped { return v }; return nil }
    public var double: Double? { if case .double(let v) = unwrapped { return v }; return nil }
    public var objectPath: ObjectPath? { if case .objectPath(let v) = unwrapped { return v }; return nil }
    /// Any integer type, widened; nil for non-integers and for a UInt64 above Int64.max.
    public var int64: Int64? {
        switch unwrapped {
        case .byte(let v): return Int64(v)
        case .int16(let v): return Int64(v)
        case .uint16(let v): return Int64(v)
        case .int32(let v): return Int64(v)
        case .uint32(let v): return Int64(v)
        case .int64(let v): return v
        case .uint64(let v): return Int64(exactly: v)
        default: return nil
        }
    }
    /// The elements of an array.
    public var elements: [DBusValue]? {
        switch unwrapped {
        case .array(_, let v): return v
        default: return nil
        }
    }
    /// The fields of a struct.
    public var fields: [DBusValue]? { if case .structure(let v) = unwrapped { return v }; return nil }
    /// `as` as Swift strings.
    public var stringArray: [String]? { elements?.compactMap(\.string) }
    /// An `a{sv}` (or any string-keyed dict) as a Swift dictionary, values unwrapped from their variants.
    public var stringKeyedDictionary: [String: DBusValue]? {
        guard case .dictionary(_, _, let entries) = unwrapped else { return nil }
        var result: [String: DBusValue] = [:]
        for entry in entries {
            guard let key = entry.key.string else { return nil }
            result[key] = entry.value.unwrapped
        }
        return result
    }
}

extension DBusValue: CustomStringConvertible {
    /// A compact, readable rendering, e.g. `{"xesam:title": <"Intro">}`.
    public var description: String {
        switch self {
        case .byte(let v): return "byte \(v)"
        case .boolean(let v): return v ? "true" : "false"
        case .int16(let v): return "int16 \(v)"
        case .uint16(let v): return "uint16 \(v)"
        case .int32(let v): return "\(v)"
        case .uint32(let v): return "uint32 \(v)"
        case .int64(let v): return "int64 \(v)"
        case .uint64(let v): return "uint64 \(v)"
        case .double(let v): return "\(v)"
        case .string(let v): return "\"\(v)\""
        case .objectPath(let v): return "objectpath '\(v)'"
        case .signature(let v): return "signature '\(v)'"
        case .unixFD(let v): return "fd \(v)"
        case .variant(let v): return "<\(v)>"
        case .array(let t, let v): return v.isEmpty ? "@a\(t.signature) []" : "[" + v.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(let k, let t, let v):
            return v.isEmpty ? "@a{\(k.signature)\(t.signature)} {}"
                : "{" + v.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case .structure(let v): return "(" + v.map(\.description).joined(separator: ", ") + ")"
        }
    }
}
