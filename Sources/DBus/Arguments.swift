/// A Swift type that a D-Bus value of one D-Bus type is read as: a handler's arguments and a property setter's
/// value are read through it, with no conversions (an `i` is not an `x`) and no defaults.
///
/// The basic types conform (`Bool`, the integers, `Double`, `String`, ``ObjectPath``), arrays and dictionaries of
/// them, and ``DBusValue`` itself as the content of a variant (`v`): `[String: DBusValue]` is the `a{sv}` of
/// property bags.
///
/// ```swift
/// Method("SetPosition", in: [("TrackId", .objectPath), ("Position", .int64)]) { call in
///     let (track, position) = try call.arguments(ObjectPath.self, Int64.self)
///     ...
/// }
/// ```
public protocol DBusDecodable: Sendable {
    /// The D-Bus type read as this Swift type.
    static var dbusType: DBusType { get }
    /// `value` as this type; nil when it is of another D-Bus type.
    init?(dbusValue value: DBusValue)
}

extension Bool: DBusDecodable {
    public static var dbusType: DBusType { .boolean }
    public init?(dbusValue value: DBusValue) { guard case .boolean(let v) = value else { return nil }; self = v }
}
extension UInt8: DBusDecodable {
    public static var dbusType: DBusType { .byte }
    public init?(dbusValue value: DBusValue) { guard case .byte(let v) = value else { return nil }; self = v }
}
extension Int16: DBusDecodable {
    public static var dbusType: DBusType { .int16 }
    public init?(dbusValue value: DBusValue) { guard case .int16(let v) = value else { return nil }; self = v }
}
extension UInt16: DBusDecodable {
    public static var dbusType: DBusType { .uint16 }
    public init?(dbusValue value: DBusValue) { guard case .uint16(let v) = value else { return nil }; self = v }
}
extension Int32: DBusDecodable {
    public static var dbusType: DBusType { .int32 }
    public init?(dbusValue value: DBusValue) { guard case .int32(let v) = value else { return nil }; self = v }
}
extension UInt32: DBusDecodable {
    public static var dbusType: DBusType { .uint32 }
    public init?(dbusValue value: DBusValue) { guard case .uint32(let v) = value else { return nil }; self = v }
}
extension Int64: DBusDecodable {
    public static var dbusType: DBusType { .int64 }
    public init?(dbusValue value: DBusValue) { guard case .int64(let v) = value else { return nil }; self = v }
}
extension UInt64: DBusDecodable {
    public static var dbusType: DBusType { .uint64 }
    public init?(dbusValue value: DBusValue) { guard case .uint64(let v) = value else { return nil }; self = v }
}
extension Double: DBusDecodable {
    public static var dbusType: DBusType { .double }
    public init?(dbusValue value: DBusValue) { guard case .double(let v) = value else { return nil }; self = v }
}
extension String: DBusDecodable {
    public static var dbusType: DBusType { .string }
    public init?(dbusValue value: DBusValue) { guard case .string(let v) = value else { return nil }; self = v }
}
extension ObjectPath: DBusDecodable {
    public static var dbusType: DBusType { .objectPath }
    public init?(dbusValue value: DBusValue) { guard case .objectPath(let v) = value else { return nil }; self = v }
}

/// A variant (`v`), read as the value inside it (one level: a variant in a variant gives a `.variant`).
extension DBusValue: DBusDecodable {
    public static var dbusType: DBusType { .variant }
    public init?(dbusValue value: DBusValue) { guard case .variant(let v) = value else { return nil }; self = v }
}

extension Array: DBusDecodable where Element: DBusDecodable {
    public static var dbusType: DBusType { .array(Element.dbusType) }
    public init?(dbusValue value: DBusValue) {
        guard case .array(Element.dbusType, let elements) = value else { return nil }
        var result: [Element] = []
        result.reserveCapacity(elements.count)
        for element in elements {
            guard let decoded = Element(dbusValue: element) else { return nil }
            result.append(decoded)
        }
        self = result
    }
}

/// A dictionary (`a{kv}`); of a key sent twice, the last entry counts.
extension Dictionary: DBusDecodable where Key: DBusDecodable, Value: DBusDecodable {
    public static var dbusType: DBusType { .dictionary(key: Key.dbusType, value: Value.dbusType) }
    public init?(dbusValue value: DBusValue) {
        guard case .dictionary(Key.dbusType, Value.dbusType, let entries) = value else { return nil }
        var result: [Key: Value] = [:]
        for entry in entries {
            guard let key = Key(dbusValue: entry.key), let value = Value(dbusValue: entry.value) else { return nil }
            result[key] = value
        }
        self = result
    }
}

extension DBusValue {
    /// The value as `type`; throws `InvalidArgs` when it is of another D-Bus type. For a property's setter, whose
    /// value is already checked against the property's type.
    ///
    /// ```swift
    /// Property("Volume", .double, access: .readwrite, set: { value in try await player.setVolume(try value.decoded()) })
    /// ```
    public func decoded<T: DBusDecodable>(as type: T.Type = T.self) throws(BusError) -> T {
        guard let decoded = T(dbusValue: self) else {
            throw .invalidArgs("a value of type '\(T.dbusType.signature)' was expected, not '\(self.type.signature)'")
        }
        return decoded
    }
}

/// A message whose arguments are read as Swift types: a handler's ``MethodCall``, whose arguments the dispatcher
/// has checked against its method's declared input signature, or a ``ReceivedMessage`` (a signal, a reply).
public protocol ArgumentsDecodable {
    var arguments: [DBusValue] { get }
}

extension MethodCall: ArgumentsDecodable {}
extension ReceivedMessage: ArgumentsDecodable {}

extension ArgumentsDecodable {
    /// The argument at `index` as `type`; throws `InvalidArgs` when there is no such argument or it is of another
    /// type. In a handler, that means it reads other types than its method declares: the caller is told so.
    ///
    /// ```swift
    /// let offset: Int64 = try call.argument(0)
    /// ```
    public func argument<T: DBusDecodable>(_ index: Int, as type: T.Type = T.self) throws(BusError) -> T {
        guard arguments.indices.contains(index) else {
            throw .invalidArgs("argument \(index) was read, of \(arguments.count)")
        }
        guard let decoded = T(dbusValue: arguments[index]) else {
            throw .invalidArgs("argument \(index) is of type '\(arguments[index].type.signature)', read as '\(T.dbusType.signature)'")
        }
        return decoded
    }

    /// All the arguments, one type for each; throws `InvalidArgs` when there are more or fewer, or one is of
    /// another type.
    ///
    /// ```swift
    /// let (name, parent) = try call.arguments(String.self, Int64.self)
    /// ```
    public func arguments<each T: DBusDecodable>(_ types: repeat (each T).Type) throws(BusError) -> (repeat each T) {
        var count = 0
        for _ in repeat each types { count += 1 }
        guard count == arguments.count else {
            throw .invalidArgs("\(count) arguments were read, of \(arguments.count)")
        }
        var index = 0
        func next<U: DBusDecodable>(_ type: U.Type) throws(BusError) -> U {
            defer { index += 1 }
            return try argument(index, as: type)
        }
        return (repeat try next(each types))
    }
}
