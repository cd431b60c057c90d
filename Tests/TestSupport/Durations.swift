extension Duration {
    /// The duration in seconds, with its fraction.
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// Whether `actual` is within `tolerance` of `expected` (nil is not): `#expect(isClose(position, to: .seconds(4),
/// within: .milliseconds(50)))`, whose failure shows the three values.
public func isClose(_ actual: Duration?, to expected: Duration, within tolerance: Duration) -> Bool {
    guard let actual else { return false }
    return abs((actual - expected).seconds) <= tolerance.seconds
}
