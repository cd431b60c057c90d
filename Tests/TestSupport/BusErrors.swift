import DBus

/// The D-Bus error name `body` throws; nil if it succeeds, "not a BusError: …" if it throws something else.
public func busErrorName(_ body: () async throws -> Void) async -> String? {
    do {
        try await body()
        return nil
    } catch let error as BusError {
        return error.name
    } catch {
        return "not a BusError: \(error)"
    }
}

/// The D-Bus error `body` throws as "name: message"; nil if it succeeds, "not a BusError: …" if it throws something
/// else.
public func busErrorMessage(_ body: () async throws -> Void) async -> String? {
    do {
        try await body()
        return nil
    } catch let error as BusError {
        return "\(error.name): \(error.message)"
    } catch {
        return "not a BusError: \(error)"
    }
}
