import DBus

/// A reply of another form than this client reads: an argument or a struct's field of another type, or one too many
/// or too few. What a lecternd of another version would send; the client then asks for it to be restarted.
public struct ReplyMismatch: Error, CustomStringConvertible {
    public let description: String
}

/// A value a decoding reads, and as what: the test holds these against the API's documentation (dbus/*.xml).
public struct Read: Sendable, Hashable, CustomStringConvertible {
    /// How the value is found: by its place (a message's argument, a struct's field) or by its key (in an `a{sv}`).
    public enum Kind: Sendable, Hashable { case field, key }
    /// Its name and the names of the values it is in, outermost first: `["book", "file_list", "chapters", "start"]`.
    public let path: [String]
    /// The D-Bus type it is read as.
    public let signature: String
    public let kind: Kind

    public var name: String { path.last ?? "" }
    public var description: String { path.joined(separator: ".") + " " + signature + (kind == .key ? " (key)" : "") }
}

/// The values of one reply, each read by its name as the D-Bus type the API documents for it: a message's arguments
/// and a struct's fields in their order, an `a{sv}`'s values by key.
///
/// Of an `a{sv}`, a key that is absent, or holds another type, reads as nil: the reply type gives its default. A
/// message's argument or a struct's field of another type throws ``ReplyMismatch``: the reply is of another form.
/// Decoders read every value they use unconditionally, each once, so that recording them (``Decoding/reads``) sees
/// all of them.
public struct ReplyReader {
    private enum Values {
        /// A message's arguments or a struct's fields; `next` is the one read next.
        case fields([DBusValue], next: Int)
        /// An `a{sv}`'s values, unwrapped from their variants, and the `a{sv}` itself.
        case keyed([String: DBusValue], DBusValue)
        /// No values: each read is written down, and gets a value of its type.
        case recording(ReadLog, path: [String], kind: Read.Kind)
    }
    private var values: Values

    /// The arguments of a message, or the fields of a struct.
    init(fields: [DBusValue]) { values = .fields(fields, next: 0) }
    /// The values of an `a{sv}`.
    init(keyed value: DBusValue) { values = .keyed(value.stringKeyedDictionary ?? [:], value) }
    /// A reader that records what is read under `path`.
    init(recordingInto log: ReadLog, path: [String] = [], kind: Read.Kind) { values = .recording(log, path: path, kind: kind) }

    /// The values as lecternd sent them: the `a{sv}` (the struct) being read. For output that shows all of a reply,
    /// also what this client does not read.
    public var reply: DBusValue {
        switch values {
        case .fields(let fields, _): .structure(fields)
        case .keyed(_, let value): value
        case .recording: .emptyVardict
        }
    }

    /// The value named `name` as `T`: nil when an `a{sv}` has no such key, or a value of another type there.
    public mutating func read<T: DBusDecodable>(_ name: String, as type: T.Type = T.self) throws -> T? {
        try next(name, T.dbusType.signature) { T(dbusValue: $0) }
    }

    /// A message's argument or a struct's field named `name`, as `T`; throws when it is not there.
    public mutating func value<T: DBusDecodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        guard let value = try read(name, as: type) else { throw ReplyMismatch(description: "\(name): not there") }
        return value
    }

    /// A message's argument named `name`, an `a{sv}` decoded as `T`; throws when it is not there.
    public mutating func value<T: ReplyDecodable>(_ name: String, of type: T.Type) throws -> T {
        guard let value = try dictionary(name, as: type) else { throw ReplyMismatch(description: "\(name): not there") }
        return value
    }

    /// An `a{sv}` named `name`, decoded as `T`.
    public mutating func dictionary<T: ReplyDecodable>(_ name: String, as type: T.Type = T.self) throws -> T? {
        if case .recording(let log, let path, let kind) = values {
            log.reads.append(Read(path: path + [name], signature: "a{sv}", kind: kind))
            var inner = ReplyReader(recordingInto: log, path: path + [name], kind: .key)
            return try T(&inner)
        }
        return try next(name, "a{sv}") { value in
            guard case .dictionary(.string, .variant, _) = value else { return nil }
            var inner = ReplyReader(keyed: value)
            return try T(&inner)
        }
    }

    /// An `aa{sv}` named `name`, each element decoded as `T`.
    public mutating func dictionaries<T: ReplyDecodable>(_ name: String, of type: T.Type = T.self) throws -> [T]? {
        try dictionaries(name) { try T(&$0) }
    }

    /// An `aa{sv}` named `name`, each element decoded by `decode`.
    public mutating func dictionaries<T>(_ name: String, _ decode: (inout ReplyReader) throws -> T) throws -> [T]? {
        if case .recording(let log, let path, let kind) = values {
            log.reads.append(Read(path: path + [name], signature: "aa{sv}", kind: kind))
            var inner = ReplyReader(recordingInto: log, path: path + [name], kind: .key)
            return [try decode(&inner)]
        }
        return try next(name, "aa{sv}") { value in
            guard case .array(.dictionary(.string, .variant), let elements) = value else { return nil }
            return try elements.map { element in
                var inner = ReplyReader(keyed: element)
                return try decode(&inner)
            }
        }
    }

    /// An array of structs named `name`, each decoded as `T` field by field: a struct of other fields throws.
    public mutating func structs<T: ReplyDecodable>(_ name: String, of type: T.Type = T.self) throws -> [T]? {
        if case .recording(let log, let path, let kind) = values {
            // The element's fields first, to know the array's type, then the array before them.
            let fields = ReadLog()
            var inner = ReplyReader(recordingInto: fields, path: path + [name], kind: .field)
            let element = try T(&inner)
            let own = fields.reads.filter { $0.path.count == path.count + 2 }.map(\.signature).joined()
            log.reads.append(Read(path: path + [name], signature: "a(\(own))", kind: kind))
            log.reads += fields.reads
            return [element]
        }
        return try next(name, "an array of structs") { value in
            guard case .array(.structure, let elements) = value else { return nil }
            return try elements.map { element in
                var inner = ReplyReader(fields: element.fields ?? [])
                let decoded = try T(&inner)
                try inner.finish(what: name)
                return decoded
            }
        }
    }

    /// Throws unless every field was read: a struct or a message with more fields is of another form.
    mutating func finish(what: String) throws {
        guard case .fields(let fields, let next) = values, next < fields.count else { return }
        throw ReplyMismatch(description: "\(what): \(fields.count) values where \(next) were read")
    }

    /// The next value (fields) or the value of `name` (keyed) through `decode`; in a recording, a read of
    /// `signature`, and `decode` of a value of that type.
    private mutating func next<T>(_ name: String, _ signature: String, _ decode: (DBusValue) throws -> T?) throws -> T? {
        switch values {
        case .keyed(let entries, _):
            return try entries[name].flatMap(decode)
        case .fields(let fields, let index):
            guard index < fields.count else {
                throw ReplyMismatch(description: "\(name): \(fields.count) values where more were read")
            }
            values = .fields(fields, next: index + 1)
            guard let decoded = try decode(fields[index]) else {
                throw ReplyMismatch(description: "\(name): \(fields[index].type.signature) where \(signature) was read")
            }
            return decoded
        case .recording(let log, let path, let kind):
            log.reads.append(Read(path: path + [name], signature: signature, kind: kind))
            guard let type = DBusType(signature), let sample = DBusValue.sample(of: type) else { return nil }
            return try decode(sample)
        }
    }
}

/// Where a recording writes what is read.
final class ReadLog {
    var reads: [Read] = []
}

/// A value that lecternd's replies hold, decoded by name (``ReplyReader``): an `a{sv}`, or a struct.
public protocol ReplyDecodable: Sendable {
    init(_ reader: inout ReplyReader) throws
}

extension DBusValue {
    /// A value of `type`, for a recording: zero, empty or false.
    static func sample(of type: DBusType) -> DBusValue? {
        switch type {
        case .byte: .byte(0)
        case .boolean: .boolean(false)
        case .int16: .int16(0)
        case .uint16: .uint16(0)
        case .int32: .int32(0)
        case .uint32: .uint32(0)
        case .int64: .int64(0)
        case .uint64: .uint64(0)
        case .double: .double(0)
        case .string: .string("")
        case .objectPath: .objectPath(ObjectPath("/")!)
        case .array(let element): .array(element, [])
        case .dictionary(let key, let value): .dictionary(key: key, value: value, [])
        case .signature, .unixFD, .variant, .structure: nil
        }
    }
}
