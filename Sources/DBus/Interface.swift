/// D-Bus interfaces declared as data (in the manner of sd-bus vtables): methods with their
/// signatures and handlers, properties with their access and change rule, signals.
/// `Properties` and `Introspectable` are generated from these declarations, and every call's
/// arguments are checked against the declared signature before its handler runs.
///
/// ```swift
/// let player = Interface("org.example.Player",
///     methods: [Method("Seek", in: [("Offset", .int64)]) { call in
///         let offset: Int64 = try call.argument(0)
///         ...
///         return []
///     }],
///     properties: [Property("Volume", .double, access: .readwrite, set: { value in let volume: Double = try value.decoded(); ... })],
///     signals: [SignalDecl("Seeked", [("Position", .int64)])])
/// ```
public struct Interface: Sendable {
    public let name: InterfaceName
    public var methods: [Method]
    public var properties: [Property]
    public var signals: [SignalDecl]

    public init(_ name: String, methods: [Method] = [], properties: [Property] = [], signals: [SignalDecl] = []) {
        guard let validName = InterfaceName(rawValue: name) else { preconditionFailure("invalid interface name \(name)") }
        self.name = validName
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }

    func method(_ member: String) -> Method? { methods.first { $0.name.rawValue == member } }
    func property(_ member: String) -> Property? { properties.first { $0.name.rawValue == member } }
}

/// One named, typed argument of a method or signal.
public struct ArgumentDecl: Sendable {
    public let name: String
    public let type: DBusType
    public init(_ name: String, _ type: DBusType) { self.name = name; self.type = type }
}

/// An incoming method call as its handler sees it: arguments already checked against the signature, read as Swift
/// types with ``ArgumentsDecodable/argument(_:as:)`` and ``ArgumentsDecodable/arguments(_:)``.
public struct MethodCall: Sendable {
    public let sender: String?
    public let path: ObjectPath
    public let interface: InterfaceName
    public let member: MemberName
    public let arguments: [DBusValue]
}

public struct Method: Sendable {
    public typealias Handler = @Sendable (MethodCall) async throws -> [DBusValue]
    /// The second part of a deferred method: runs off the call queue; its result is the reply.
    public typealias Completion = @Sendable () async throws -> [DBusValue]
    /// The first part of a deferred method: runs on the call queue, in arrival order, and returns the rest.
    public typealias DeferredHandler = @Sendable (MethodCall) async throws -> Completion
    public let name: MemberName
    public let inputs: [ArgumentDecl]
    public let outputs: [ArgumentDecl]
    /// The whole call, both parts of a deferred method in a row.
    public let handler: Handler
    let deferred: DeferredHandler?

    public init(_ name: String, in inputs: [(String, DBusType)] = [], out outputs: [(String, DBusType)] = [],
                handler: @escaping Handler) {
        self.init(name, inputs, outputs, handler: handler, deferred: nil)
    }

    /// A method for long work (a big listing): `deferred` runs on the call queue in arrival order, where it
    /// should only check its arguments, and returns the work (the read and the encoding), which runs off the
    /// queue while the next calls are handled: it starts after every earlier call's turn, so it sees what they
    /// wrote. The reply still reaches its sender after the replies to that sender's earlier calls and before
    /// those to its later ones.
    ///
    /// ```swift
    /// Method.deferred("ListAll", out: [("items", .array(.string))]) { call in
    ///     return { [.array(.string, try store.all().map(DBusValue.string))] }
    /// }
    /// ```
    public static func deferred(_ name: String, in inputs: [(String, DBusType)] = [], out outputs: [(String, DBusType)] = [],
                                _ deferred: @escaping DeferredHandler) -> Method {
        Method(name, inputs, outputs, handler: { call in try await deferred(call)() }, deferred: deferred)
    }

    private init(_ name: String, _ inputs: [(String, DBusType)], _ outputs: [(String, DBusType)],
                 handler: @escaping Handler, deferred: DeferredHandler?) {
        guard let validName = MemberName(rawValue: name) else { preconditionFailure("invalid method name \(name)") }
        self.name = validName
        self.inputs = inputs.map { ArgumentDecl($0.0, $0.1) }
        self.outputs = outputs.map { ArgumentDecl($0.0, $0.1) }
        self.handler = handler
        self.deferred = deferred
    }

    var inputSignature: String { inputs.map(\.type.signature).joined() }
    var outputSignature: String { outputs.map(\.type.signature).joined() }
}

public struct SignalDecl: Sendable {
    public let name: MemberName
    public let arguments: [ArgumentDecl]
    public init(_ name: String, _ arguments: [(String, DBusType)] = []) {
        guard let validName = MemberName(rawValue: name) else { preconditionFailure("invalid signal name \(name)") }
        self.name = validName
        self.arguments = arguments.map { ArgumentDecl($0.0, $0.1) }
    }
}

public struct Property: Sendable {
    public enum Access: String, Sendable { case read, write, readwrite }

    /// What `PropertiesChanged` says when the value changes (the EmitsChangedSignal annotation).
    public enum ChangeRule: String, Sendable {
        /// Sent with the new value.
        case emits = "true"
        /// Named as invalidated, without the value.
        case invalidates
        /// Never changes while the object exists.
        case const
        /// Changes are not announced (e.g. a position that moves with time).
        case none = "false"
    }

    public typealias Getter = @Sendable () -> DBusValue
    public typealias Setter = @Sendable (DBusValue) async throws -> Void

    public let name: MemberName
    public let type: DBusType
    public let access: Access
    public let changeRule: ChangeRule
    /// Computes the value at read time, on the connection's thread: it must be quick and must not block.
    /// Without it, the value is the one last stored with `ExportedObject.update`.
    public let getter: Getter?
    public let setter: Setter?
    /// `type`'s signature, as the variant of a `Get` reply names it.
    let signature: String

    public init(_ name: String, _ type: DBusType, access: Access = .read, changes: ChangeRule = .emits,
                get getter: Getter? = nil, set setter: Setter? = nil) {
        guard let validName = MemberName(rawValue: name) else { preconditionFailure("invalid property name \(name)") }
        precondition(access == .read || setter != nil, "writable property \(name) needs a setter")
        self.name = validName
        self.type = type
        self.access = access
        self.changeRule = changes
        self.getter = getter
        self.setter = setter
        self.signature = type.signature
        precondition(Signature(rawValue: signature) != nil, "property \(name) has an invalid type '\(signature)'")
    }

    var isReadable: Bool { access != .write }
    var isWritable: Bool { access != .read }
}

// MARK: - Introspection

enum Introspection {
    static let header = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">

        """

    static let standardInterfaces = """
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect"><arg name="xml_data" type="s" direction="out"/></method>
          </interface>
          <interface name="org.freedesktop.DBus.Peer">
            <method name="Ping"/>
            <method name="GetMachineId"><arg name="machine_uuid" type="s" direction="out"/></method>
          </interface>
          <interface name="org.freedesktop.DBus.Properties">
            <method name="Get">
              <arg name="interface_name" type="s" direction="in"/>
              <arg name="property_name" type="s" direction="in"/>
              <arg name="value" type="v" direction="out"/>
            </method>
            <method name="GetAll">
              <arg name="interface_name" type="s" direction="in"/>
              <arg name="properties" type="a{sv}" direction="out"/>
            </method>
            <method name="Set">
              <arg name="interface_name" type="s" direction="in"/>
              <arg name="property_name" type="s" direction="in"/>
              <arg name="value" type="v" direction="in"/>
            </method>
            <signal name="PropertiesChanged">
              <arg name="interface_name" type="s"/>
              <arg name="changed_properties" type="a{sv}"/>
              <arg name="invalidated_properties" type="as"/>
            </signal>
          </interface>

        """

    static func xml(interfaces: [Interface], children: [String]) -> String {
        var out = header + "<node>\n"
        if !interfaces.isEmpty { out += standardInterfaces }
        for interface in interfaces { out += xml(interface) }
        for child in children { out += "  <node name=\"\(child)\"/>\n" }
        return out + "</node>\n"
    }

    static func xml(_ interface: Interface) -> String {
        var out = "  <interface name=\"\(interface.name)\">\n"
        for method in interface.methods {
            let args = method.inputs.map { ($0, "in") } + method.outputs.map { ($0, "out") }
            if args.isEmpty {
                out += "    <method name=\"\(method.name)\"/>\n"
                continue
            }
            out += "    <method name=\"\(method.name)\">\n"
            for (arg, direction) in args {
                out += "      <arg name=\"\(arg.name)\" type=\"\(escape(arg.type.signature))\" direction=\"\(direction)\"/>\n"
            }
            out += "    </method>\n"
        }
        for signal in interface.signals {
            if signal.arguments.isEmpty {
                out += "    <signal name=\"\(signal.name)\"/>\n"
                continue
            }
            out += "    <signal name=\"\(signal.name)\">\n"
            for arg in signal.arguments {
                out += "      <arg name=\"\(arg.name)\" type=\"\(escape(arg.type.signature))\"/>\n"
            }
            out += "    </signal>\n"
        }
        for property in interface.properties {
            let open = "    <property name=\"\(property.name)\" type=\"\(escape(property.type.signature))\" access=\"\(property.access.rawValue)\""
            if property.changeRule == .emits {
                out += open + "/>\n"
            } else {
                out += open + ">\n      <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"\(property.changeRule.rawValue)\"/>\n    </property>\n"
            }
        }
        return out + "  </interface>\n"
    }

    /// XML's escapes for attribute values, scalar by scalar: a String search works on Characters, and a combining
    /// mark after "&" or "<" makes one Character with it that a search for "&" would not find.
    static func escape(_ s: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in s.unicodeScalars {
            switch scalar {
            case "&": out.append(contentsOf: "&amp;".unicodeScalars)
            case "<": out.append(contentsOf: "&lt;".unicodeScalars)
            case ">": out.append(contentsOf: "&gt;".unicodeScalars)
            case "\"": out.append(contentsOf: "&quot;".unicodeScalars)
            default: out.append(scalar)
            }
        }
        return String(out)
    }
}
