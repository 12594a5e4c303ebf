"""Fetch the corpus files nobody on this project wrote into OUT (as
crates/dataset/tests/files_people_hold.rs does): the `.h5` test files PyTables ships in its
wheel into OUT/pytables, h5py's own test data files into OUT/h5py-tests.

usage: fetch_corpus.py TABLES_PIN WHEEL_DIR OUT
"""
import glob
import os
import shutil
import subprocess
import sys
import zipfile

import h5py

pin, wheel_dir, out = sys.argv[1:4]
pt = os.path.join(out, "pytables")
hp = os.path.join(out, "h5py-tests")
if not glob.glob(os.path.join(pt, "*.h5")):
    version = pin.split("==")[1]
    wheels = glob.glob(os.path.join(wheel_dir, "tables-%s-*.whl" % version))
    if not wheels:
        subprocess.check_call([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                               "--only-binary=:all:", "--dest", wheel_dir, pin])
        wheels = glob.glob(os.path.join(wheel_dir, "tables-%s-*.whl" % version))
    os.makedirs(pt, exist_ok=True)
    with zipfile.ZipFile(sorted(wheels)[0]) as z:
        for n in z.namelist():
            if n.startswith("tables/tests/") and n.endswith(".h5"):
                with open(os.path.join(pt, os.path.basename(n)), "wb") as fh:
                    fh.write(z.read(n))
if not glob.glob(os.path.join(hp, "*.h5")):
    os.makedirs(hp, exist_ok=True)
    for f in glob.glob(os.path.join(os.path.dirname(h5py.__file__), "tests", "data_files", "*.h5")):
        shutil.copy(f, hp)
