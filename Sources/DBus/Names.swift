/// Validated D-Bus names. Each is a `RawRepresentable` whose failable initialiser applies the
/// specification's rules, so a value of these types is always safe to hand to libdbus
/// (which aborts the process on an invalid name).
///
/// ```swift
/// let path = ObjectPath("/org/mpris/MediaPlayer2")!   // valid
/// ObjectPath("/trailing/")                             // nil
/// ```

/// An object path: `/` or `/`-separated elements of `[A-Za-z0-9_]+`.
public struct ObjectPath: RawRepresentable, Hashable, Sendable, CustomStringConvertible, Comparable {
    public let rawValue: String
    public init?(rawValue: String) {
        guard ObjectPath.isValid(rawValue) else { return nil }
        self.rawValue = rawValue
    }
    public init?(_ string: String) { self.init(rawValue: string) }
    /// A path libdbus has already validated (that of a received message).
    init(validated rawValue: String) { self.rawValue = rawValue }
    public static let root = ObjectPath(rawValue: "/")!
    public var description: String { rawValue }
    public static func < (a: ObjectPath, b: ObjectPath) -> Bool { a.rawValue < b.rawValue }

    /// The path with `element` appended; nil when `element` is not a valid path element.
    public func appending(_ element: String) -> ObjectPath? {
        ObjectPath(rawValue: rawValue == "/" ? "/" + element : rawValue + "/" + element)
    }

    /// Whether `self` is a strict ancestor of `other`.
    public func isAncestor(of other: ObjectPath) -> Bool {
        if self == other { return false }
        if rawValue == "/" { return true }
        return other.rawValue.hasPrefix(rawValue + "/")
    }

    static func isValid(_ s: String) -> Bool {
        let bytes = Array(s.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        guard bytes.last != UInt8(ascii: "/") else { return false }
        var previousSlash = false
        for b in bytes.dropFirst() {
            if b == UInt8(ascii: "/") {
                if previousSlash { return false }
                previousSlash = true
            } else {
                guard isWordByte(b) else { return false }
                previousSlash = false
            }
        }
        return true
    }
}

/// An interface name such as `org.mpris.MediaPlayer2.Player`: two or more dot-separated elements of
/// `[A-Za-z_][A-Za-z0-9_]*`, at most 255 bytes. Error names follow the same rules.
public struct InterfaceName: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init?(rawValue: String) {
        guard isDottedName(rawValue, allowHyphen: false, allowLeadingDigit: false) else { return nil }
        self.rawValue = rawValue
    }
    public init?(_ string: String) { self.init(rawValue: string) }
    public var description: String { rawValue }
}

/// A D-Bus error name; same syntax as an interface name.
public struct ErrorName: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init?(rawValue: String) {
        guard isDottedName(rawValue, allowHyphen: false, allowLeadingDigit: false) else { return nil }
        self.rawValue = rawValue
    }
    public init?(_ string: String) { self.init(rawValue: string) }
    public var description: String { rawValue }
}

/// A method, signal or property name: `[A-Za-z_][A-Za-z0-9_]*`, 1 to 255 bytes.
public struct MemberName: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init?(rawValue: String) {
        let bytes = Array(rawValue.utf8)
        guard !bytes.isEmpty, bytes.count <= 255, !isDigit(bytes[0]), bytes.allSatisfy(isWordByte) else {
            return nil
        }
        self.rawValue = rawValue
    }
    public init?(_ string: String) { self.init(rawValue: string) }
    public var description: String { rawValue }
}

/// A bus name: unique (`:1.42`) or well-known (`org.mpris.MediaPlayer2.lectern`).
public struct BusName: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init?(rawValue: String) {
        if rawValue.hasPrefix(":") {
            guard isDottedName(String(rawValue.dropFirst()), allowHyphen: true, allowLeadingDigit: true),
                  rawValue.utf8.count <= 255 else { return nil }
        } else {
            guard isDottedName(rawValue, allowHyphen: true, allowLeadingDigit: false) else { return nil }
        }
        self.rawValue = rawValue
    }
    public init?(_ string: String) { self.init(rawValue: string) }
    public var isUnique: Bool { rawValue.hasPrefix(":") }
    public var description: String { rawValue }
}

private func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
private func isWordByte(_ b: UInt8) -> Bool {
    (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
        || isDigit(b) || b == UInt8(ascii: "_")
}

private func isDottedName(_ s: String, allowHyphen: Bool, allowLeadingDigit: Bool) -> Bool {
    let bytes = Array(s.utf8)
    guard !bytes.isEmpty, bytes.count <= 255 else { return false }
    let elements = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    guard elements.count >= 2 else { return false }
    for element in elements {
        guard let first = element.first else { return false }
        if !allowLeadingDigit && isDigit(first) { return false }
        for b in element where !(isWordByte(b) || (allowHyphen && b == UInt8(ascii: "-"))) { return false }
    }
    return true
}
