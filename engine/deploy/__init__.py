"""Deploying a design: the least hardware for a load (sizing) and the design's deployment files (mig-parted,
Triton model repository, Kubernetes Deployments and autoscalers), each checked before it is handed out."""
