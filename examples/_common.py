"""Shared helpers for the example scripts: output folder and a matplotlib import with a clear error."""
import argparse
import pathlib


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", default="out", help="folder for the PNG (default ./out)")
    return p


def pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit("this example plots with matplotlib: pip install 'jaxpuffer[plot]'") from None
    return plt


def save(fig, out: str, name: str) -> pathlib.Path:
    folder = pathlib.Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    fig.savefig(path, dpi=130, bbox_inches="tight")
    print(f"wrote {path}")
    return path
