/// A single complete D-Bus type, as a signature describes it.
///
/// ```swift
/// DBusType.dictionary(key: .string, value: .variant).signature   // "a{sv}"
/// ```
public indirect enum DBusType: Hashable, Sendable, CustomStringConvertible {
    case byte, boolean, int16, uint16, int32, uint32, int64, uint64, double
    case string, objectPath, signature, unixFD
    case variant
    case array(DBusType)
    /// `a{KV}`: an array of dict entries. `key` must be a basic type.
    case dictionary(key: DBusType, value: DBusType)
    case structure([DBusType])

    /// The type code of a basic or container type, as libdbus numbers them.
    var code: Int32 {
        switch self {
        case .byte: return typeCode("y")
        case .boolean: return typeCode("b")
        case .int16: return typeCode("n")
        case .uint16: return typeCode("q")
        case .int32: return typeCode("i")
        case .uint32: return typeCode("u")
        case .int64: return typeCode("x")
        case .uint64: return typeCode("t")
        case .double: return typeCode("d")
        case .string: return typeCode("s")
        case .objectPath: return typeCode("o")
        case .signature: return typeCode("g")
        case .unixFD: return typeCode("h")
        case .variant: return typeCode("v")
        case .array, .dictionary: return typeCode("a")
        case .structure: return typeCode("r")
        }
    }

    /// Basic types can be dictionary keys.
    public var isBasic: Bool {
        switch self {
        case .variant, .array, .dictionary, .structure: return false
        default: return true
        }
    }

    /// The signature text of this one type.
    public var signature: String {
        switch self {
        case .array(let element): return "a" + element.signature
        case .dictionary(let key, let value): return "a{" + key.signature + value.signature + "}"
        case .structure(let fields): return "(" + fields.map(\.signature).joined() + ")"
        default: return String(UnicodeScalar(UInt8(code)))
        }
    }

    public var description: String { signature }

    /// Parses exactly one complete type; nil if `text` is not one valid type.
    public init?(_ text: String) {
        guard let parsed = Signature(text), parsed.types.count == 1 else { return nil }
        self = parsed.types[0]
    }
}

@inline(__always) func typeCode(_ c: Unicode.Scalar) -> Int32 { Int32(c.value) }

/// A validated D-Bus signature: zero or more complete types, at most 255 bytes, arrays and structs
/// each nested at most 32 deep, dict entries only as array elements with a basic key.
public struct Signature: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public let types: [DBusType]

    public init?(rawValue: String) {
        guard let types = SignatureParser.parse(rawValue) else { return nil }
        self.rawValue = rawValue
        self.types = types
    }
    public init?(_ text: String) { self.init(rawValue: text) }
    public init(_ types: [DBusType]) {
        self.types = types
        self.rawValue = types.map(\.signature).joined()
    }
    public static let empty = Signature([])
    public var description: String { rawValue }
}

/// The spec's limits on one signature.
public enum DBusLimits {
    public static let maxSignatureLength = 255
    public static let maxArrayDepth = 32
    public static let maxStructDepth = 32
    /// The deepest a message body may nest containers, variants included (libdbus rejects deeper).
    public static let maxTotalDepth = 64
}

private struct SignatureParser {
    var bytes: [UInt8]
    var index = 0

    static func parse(_ text: String) -> [DBusType]? {
        let bytes = Array(text.utf8)
        guard bytes.count <= DBusLimits.maxSignatureLength else { return nil }
        var parser = SignatureParser(bytes: bytes)
        var types: [DBusType] = []
        while parser.index < bytes.count {
            guard let type = parser.parseOne(arrayDepth: 0, structDepth: 0) else { return nil }
            types.append(type)
        }
        return types
    }

    mutating func parseOne(arrayDepth: Int, structDepth: Int) -> DBusType? {
        guard index < bytes.count else { return nil }
        let c = bytes[index]
        index += 1
        switch c {
        case UInt8(ascii: "y"): return .byte
        case UInt8(ascii: "b"): return .boolean
        case UInt8(ascii: "n"): return .int16
        case UInt8(ascii: "q"): return .uint16
        case UInt8(ascii: "i"): return .int32
        case UInt8(ascii: "u"): return .uint32
        case UInt8(ascii: "x"): return .int64
        case UInt8(ascii: "t"): return .uint64
        case UInt8(ascii: "d"): return .double
        case UInt8(ascii: "s"): return .string
        case UInt8(ascii: "o"): return .objectPath
        case UInt8(ascii: "g"): return .signature
        case UInt8(ascii: "h"): return .unixFD
        case UInt8(ascii: "v"): return .variant
        case UInt8(ascii: "a"):
            guard arrayDepth < DBusLimits.maxArrayDepth, index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "{") {
                index += 1
                guard structDepth < DBusLimits.maxStructDepth,
                      let key = parseOne(arrayDepth: arrayDepth + 1, structDepth: structDepth + 1), key.isBasic,
                      let value = parseOne(arrayDepth: arrayDepth + 1, structDepth: structDepth + 1),
                      index < bytes.count, bytes[index] == UInt8(ascii: "}")
                else { return nil }
                index += 1
                return .dictionary(key: key, value: value)
            }
            guard let element = parseOne(arrayDepth: arrayDepth + 1, structDepth: structDepth) else { return nil }
            return .array(element)
        case UInt8(ascii: "("):
            guard structDepth < DBusLimits.maxStructDepth else { return nil }
            var fields: [DBusType] = []
            while index < bytes.count, bytes[index] != UInt8(ascii: ")") {
                guard let field = parseOne(arrayDepth: arrayDepth, structDepth: structDepth + 1) else { return nil }
                fields.append(field)
            }
            guard index < bytes.count, !fields.isEmpty else { return nil }
            index += 1
            return .structure(fields)
        default:
            return nil
        }
    }
}
