import Synchronization

/// An object exported on a connection at one path, with the interfaces declared for it.
///
/// Property values live here: the owner stores them with ``update(_:_:)``, which sends one
/// `PropertiesChanged` per call for the values that really changed, following each property's
/// change rule. `Get` and `GetAll` are answered from this store (or a property's getter) on the
/// connection's thread, without a hop to the owner.
///
/// ```swift
/// let object = try connection.export(ObjectPath("/org/example/Player")!, interfaces: [player])
/// object.update("org.example.Player", ["Volume": .double(0.5), "Status": .string("Playing")])
/// ```
public final class ExportedObject: Sendable {
    public let path: ObjectPath
    public let interfaces: [Interface]
    let connection: BusConnection
    /// Stored property values by interface, then name; the lock also orders PropertiesChanged emissions.
    private let store = Mutex<[InterfaceName: [String: DBusValue]]>([:])

    init(path: ObjectPath, interfaces: [Interface], connection: BusConnection) {
        self.path = path
        self.interfaces = interfaces
        self.connection = connection
    }

    func interface(_ name: String) -> Interface? { interfaces.first { $0.name.rawValue == name } }

    /// Stores new values for properties of `interface` and announces the ones that changed, batched in
    /// one `PropertiesChanged`. Unknown names and values of the wrong type are programming errors.
    public func update(_ interface: String, _ values: [String: DBusValue]) {
        guard let declaration = self.interface(interface) else { preconditionFailure("\(path) has no interface \(interface)") }
        store.withLock { store in
            var current = store[declaration.name] ?? [:]
            var changed: [String: DBusValue] = [:]
            var invalidated: [String] = []
            for (name, value) in values {
                guard let property = declaration.property(name) else { preconditionFailure("\(interface) has no property \(name)") }
                precondition(value.type == property.type, "\(interface).\(name) is \(property.type), not \(value.type)")
                let previous = current[name]
                current[name] = value
                guard let previous, previous != value else { continue }
                switch property.changeRule {
                case .emits: changed[name] = value
                case .invalidates: invalidated.append(name)
                case .const, .none: break
                }
            }
            store[declaration.name] = current
            guard !changed.isEmpty || !invalidated.isEmpty else { return }
            try? connection.emitSignal(
                path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                arguments: [.string(interface), .vardict(changed), .strings(invalidated.sorted())])
        }
    }

    /// Sends one of this object's declared signals.
    public func emit(_ interface: String, _ signal: String, _ arguments: [DBusValue]) throws {
        guard let declaration = self.interface(interface)?.signals.first(where: { $0.name.rawValue == signal }) else {
            preconditionFailure("\(interface) has no signal \(signal)")
        }
        precondition(arguments.map(\.type) == declaration.arguments.map(\.type), "\(signal): wrong argument types")
        try connection.emitSignal(path: path, interface: interface, member: signal, arguments: arguments)
    }

    /// The current value of one property, as `Get` answers it.
    public func value(_ interface: String, _ name: String) throws(BusError) -> DBusValue {
        guard let declaration = self.interface(interface) else {
            throw .unknownInterface("Object \(path) has no interface '\(interface)'")
        }
        guard let property = declaration.property(name) else {
            throw .unknownProperty("Interface '\(interface)' has no property '\(name)'")
        }
        guard property.isReadable else { throw .invalidArgs("Property '\(interface).\(name)' is write-only") }
        guard let value = value(of: property, in: declaration) else {
            throw .failed("Property '\(interface).\(name)' has no value yet")
        }
        return value
    }

    /// A readable property's value: its getter's, or the one stored; nil before the first `update`.
    func value(of property: Property, in declaration: Interface) -> DBusValue? {
        if let getter = property.getter { return getter() }
        return store.withLock { $0[declaration.name]?[property.name.rawValue] }
    }

    /// All readable properties of `interface`, as `GetAll` answers them.
    public func allValues(_ interface: String) throws(BusError) -> [String: DBusValue] {
        guard let declaration = self.interface(interface) else {
            throw .unknownInterface("Object \(path) has no interface '\(interface)'")
        }
        let stored = store.withLock { $0[declaration.name] ?? [:] }
        var result: [String: DBusValue] = [:]
        for property in declaration.properties where property.isReadable {
            if let getter = property.getter {
                result[property.name.rawValue] = getter()
            } else if let value = stored[property.name.rawValue] {
                result[property.name.rawValue] = value
            }
        }
        return result
    }
}
