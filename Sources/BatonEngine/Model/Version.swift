/// Baton's version, shown by `batond --version`, `baton --version` and `ping`.
public enum BatonVersion {
    public static let current = "0.1.0"
}
