#!/bin/sh
# PyTorch for this machine, run before `pip install -e .` in the environment it installs into
# (README's commands 1 and 2). With an NVIDIA GPU (nvidia-smi lists one), or off Linux x86_64
# (PyPI's torch is a CPU build there), it does nothing: pip install -e . takes PyPI's torch. On
# a Linux x86_64 machine without one, it installs PyTorch's CPU build from PyTorch's own index,
# which pip install -e . then keeps: no NVIDIA wheel (torch 0.9 GB, not a 6 GB venv). Where
# that index does not answer (a network that reaches PyPI alone) or what it gives does not
# import, it removes what it installed, says so and leaves it to pip install -e ., which then
# installs PyPI's CUDA build: it works on a CPU, only larger.
# A torch already installed is kept. Never fails the command line it is part of.
#   sh scripts/install_torch.sh
INDEX=https://download.pytorch.org/whl/cpu
say() { echo "install_torch: $*"; }

if python -c "import torch" >/dev/null 2>&1; then
  say "torch $(python -c 'import torch; print(torch.__version__)') is installed already: kept"
elif nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  say "an NVIDIA GPU: pip install -e . installs PyPI's torch, its CUDA build"
elif [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  say "no NVIDIA GPU, $(uname -s) $(uname -m): PyPI's torch is a CPU build here"
elif ! python -c "import urllib.request as u; u.urlopen('$INDEX/torch/', timeout=10)" \
    >/dev/null 2>&1; then
  say "no NVIDIA GPU, but $INDEX does not answer: pip install -e . installs PyPI's torch," \
      "its CUDA build (about 6 GB; it runs on a CPU too)"
elif python -m pip install --index-url "$INDEX" torch torchvision \
    && python -c "import torch, torchvision" >/dev/null 2>&1; then
  say "no NVIDIA GPU: PyTorch's CPU build installed from $INDEX"
else
  # nothing half-installed is left for pip install -e . to keep: a torch from one build and
  # a torchvision from another do not import
  python -m pip uninstall -y -q torch torchvision >/dev/null 2>&1
  say "no NVIDIA GPU, but no working CPU build came from $INDEX: pip install -e . installs" \
      "PyPI's torch, its CUDA build (about 6 GB; it runs on a CPU too)"
fi
exit 0
