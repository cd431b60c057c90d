import DBus

/// An interface of lecternd's and the object it is on.
public struct APIInterface: Sendable, Hashable, CustomStringConvertible {
    public let name: String
    public let path: String

    public static let library = APIInterface(name: "org.lectern.Library1", path: lecternPath)
    public static let bookmarks = APIInterface(name: "org.lectern.Bookmarks1", path: lecternPath)
    public static let player = APIInterface(name: "org.lectern.Player1", path: lecternPath)
    public static let history = APIInterface(name: "org.lectern.History1", path: lecternPath)
    public static let configuration = APIInterface(name: "org.lectern.Configuration1", path: lecternPath)
    public static let prompts = APIInterface(name: "org.lectern.Prompts1", path: lecternPath)
    public static let cast = APIInterface(name: "org.lectern.Cast1", path: lecternPath)
    /// MPRIS's player, on the same bus name (its owner serves both).
    public static let mprisPlayer = APIInterface(name: "org.mpris.MediaPlayer2.Player", path: "/org/mpris/MediaPlayer2")

    /// Lectern's own object, where its interfaces are (dbus/*.xml).
    public static let lecternPath = "/org/lectern/Lectern1"

    public var description: String { name }
}

/// Where a value lecternd sends comes from, as the API documents it.
public enum ReplySource: Sendable, Hashable, CustomStringConvertible {
    /// A method's out arguments.
    case reply(APIInterface, method: String)
    /// A signal's arguments.
    case signal(APIInterface, name: String)
    /// A property's value (Properties.Get), read as an argument named after the property.
    case property(APIInterface, name: String)
    /// All the properties of an interface (Properties.GetAll): an `a{sv}` keyed by their names.
    case properties(APIInterface)

    public var interface: APIInterface {
        switch self {
        case .reply(let interface, _), .signal(let interface, _), .property(let interface, _), .properties(let interface):
            interface
        }
    }

    public var description: String {
        switch self {
        case .reply(let interface, let name), .signal(let interface, let name), .property(let interface, let name):
            "\(interface.name).\(name)"
        case .properties(let interface): "\(interface.name)'s properties"
        }
    }
}

/// How the client reads one thing lecternd sends (``ReplySource``), and the words for it in the message that asks
/// for a restart when lecternd sends it in another form.
public struct Decoding<Value>: RecordedDecoding {
    public let source: ReplySource
    /// "lists books": "lecternd lists books in a form this lectern does not read".
    let what: String
    private let decode: @Sendable (inout ReplyReader) throws -> Value

    init(_ source: ReplySource, what: String? = nil, _ decode: @escaping @Sendable (inout ReplyReader) throws -> Value) {
        self.source = source
        self.decode = decode
        switch source {
        case .reply(_, let method): self.what = what ?? "answers \(method)"
        case .signal(_, let name): self.what = what ?? "sends \(name)"
        case .property(_, let name): self.what = what ?? "gives \(name)"
        case .properties(let interface): self.what = what ?? "gives the properties of \(interface.name)"
        }
    }

    /// The message's arguments (a property's value: the variant's content; all the properties: their `a{sv}`).
    func decode(_ arguments: [DBusValue]) throws -> Value {
        var values = arguments
        switch source {
        case .property:
            guard arguments.count == 1, case .variant(let inner) = arguments[0] else {
                throw ReplyMismatch(description: "Get: \(arguments.map(\.type.signature).joined()) where a variant was expected")
            }
            values = [inner]
        case .properties:
            guard arguments.count == 1, case .dictionary(.string, .variant, _) = arguments[0] else {
                throw ReplyMismatch(description: "GetAll: \(arguments.map(\.type.signature).joined()) where a{sv} was expected")
            }
            var keyed = ReplyReader(keyed: arguments[0])
            return try decode(&keyed)
        case .reply, .signal:
            break
        }
        var reader = ReplyReader(fields: values)
        let value = try decode(&reader)
        try reader.finish(what: "\(source)")
        return value
    }

    public var reads: [Read] {
        let log = ReadLog()
        var reader: ReplyReader
        if case .properties = source {
            reader = ReplyReader(recordingInto: log, kind: .key)
        } else {
            reader = ReplyReader(recordingInto: log, kind: .field)
        }
        _ = try? decode(&reader)
        return log.reads
    }
}

/// A decoding, whatever the value it gives: what the test against dbus/*.xml goes through.
public protocol RecordedDecoding: Sendable {
    var source: ReplySource { get }
    /// What the decoding reads, in the order it reads it.
    var reads: [Read] { get }
}

extension Decoding where Value: DBusDecodable {
    /// A property read as the type it has.
    static func property(_ interface: APIInterface, _ name: String) -> Decoding {
        Decoding(.property(interface, name: name)) { try $0.value(name) }
    }

    /// A method's reply of one value.
    static func reply(_ interface: APIInterface, _ method: String, _ name: String) -> Decoding {
        Decoding(.reply(interface, method: method)) { try $0.value(name) }
    }
}
